//! Class 6: denied_hosts and the address policy judge resolved addresses in every canonical form.

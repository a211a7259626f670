//! Class 9: a call's processes, background and setsid ones included, end with the call.

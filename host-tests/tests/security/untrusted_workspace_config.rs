//! Class 1: an untrusted workspace's config can only tighten the user's policy, whatever its TOML shape.

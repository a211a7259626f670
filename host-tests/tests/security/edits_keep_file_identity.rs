//! Class 8: edits keep owner, group and hard links, and a no-op edit leaves every byte.

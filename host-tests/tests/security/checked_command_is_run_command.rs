//! Class 7: execute_command checks .clineignore on the command that runs, and protects included rules files.

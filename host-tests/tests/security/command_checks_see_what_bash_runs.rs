//! Class 2: command permissions judge every expansion bash would perform.

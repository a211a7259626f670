//! Class 3: text shown to a person (approval prompts, say events, watch lines) cannot redraw the terminal.

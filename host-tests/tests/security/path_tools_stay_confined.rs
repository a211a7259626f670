//! Class 4: every path tool opens files through the confirmed open, with a size cap.

//! Class 5: serve --http survives accept errors, idle connections and large bodies.

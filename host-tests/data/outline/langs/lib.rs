//! A counter.

/// Counts things.
#[derive(Debug, Default)]
pub struct Counter {
    count: u64,
}

pub enum Step {
    One,
    Many(u64),
}

impl Counter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, step: Step) {
        self.count += match step {
            Step::One => 1,
            Step::Many(n) => n,
        };
    }
}

pub trait Reset {
    fn reset(&mut self);
}

fn main() {
    let mut counter = Counter::new();
    counter.add(Step::One);
}

//! What the examples share: their command line of whole numbers.

/// The command line's arguments as whole numbers; one that is not ends the example with a
/// line naming it (exit 2).
pub fn numbers() -> Vec<usize> {
    std::env::args()
        .skip(1)
        .enumerate()
        .map(|(i, s)| {
            s.parse().unwrap_or_else(|_| {
                eprintln!("argument {}: expected a whole number, found '{s}'", i + 1);
                std::process::exit(2)
            })
        })
        .collect()
}

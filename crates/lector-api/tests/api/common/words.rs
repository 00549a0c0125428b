//! Plain words of praise and of blame, for the stories that train sentiment on short sentences.

/// Ten words of praise; `BAD[i]` is the blame of the same rank.
pub const GOOD: [&str; 10] = [
    "great",
    "excellent",
    "wonderful",
    "lovely",
    "fantastic",
    "superb",
    "delightful",
    "perfect",
    "brilliant",
    "amazing",
];

/// Ten words of blame.
pub const BAD: [&str; 10] = [
    "terrible",
    "awful",
    "horrible",
    "dreadful",
    "disgusting",
    "poor",
    "bad",
    "appalling",
    "miserable",
    "lousy",
];

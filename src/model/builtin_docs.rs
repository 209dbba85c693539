//! One sentence for each built-in node type and standard function, for the
//! reference `aido nodes` prints.

/// The documentation of the built-in node type or standard function `name`.
pub fn builtin_doc(name: &str) -> Option<&'static str> {
    DOCS.iter().find(|(n, _)| *n == name).map(|(_, doc)| *doc)
}

const DOCS: &[(&str, &str)] = &[
    // Node types.
    (
        "selector",
        "Ticks its children in order until one succeeds or runs; fails if all fail. With :memory true it resumes at the child that was running.",
    ),
    (
        "sequence",
        "Ticks its children in order until one fails or runs; succeeds if all succeed. With :memory true it resumes at the child that was running.",
    ),
    (
        "selector-p",
        "A selector that tries each child with probability :p.",
    ),
    (
        "loop",
        "Ticks its child up to :count times while it succeeds; returns the first other status, else success.",
    ),
    (
        "loop-until-success",
        "Ticks its child up to :count times while it fails; returns the first other status, else failure.",
    ),
    (
        "parallel",
        "Ticks every child; decides by :mode and :how-many, by :policy, or by success and failure thresholds.",
    ),
    (
        "randomly",
        "With probability :p ticks its first child, otherwise its second (or fails).",
    ),
    ("choose", "Ticks one child picked at random."),
    (
        "choose-each",
        "Ticks a random child not picked before, remembering the pool in the db; :repeat true starts over when all were picked.",
    ),
    (
        "weighted-choice",
        "Ticks one child picked at random by :weights.",
    ),
    ("invert", "Success becomes failure and failure success."),
    (
        "always",
        "Its child's status, with failure turned into success.",
    ),
    (
        "never",
        "Its child's status, with success turned into failure.",
    ),
    ("success", "Succeeds."),
    ("failure", "Fails."),
    ("present?", "Succeeds if :key is in the db."),
    ("equal?", "Succeeds if :v1 equals :v2."),
    (
        "test?",
        "Succeeds if the value at :key compares with :val by :oper.",
    ),
    (
        "less-than?",
        "Succeeds if the number at :key is less than :val.",
    ),
    (
        "greater-than?",
        "Succeeds if the number at :key is greater than :val.",
    ),
    ("define!", "Sets :key to :val."),
    ("inc!", "Adds 1 to the number at :key (0 when absent)."),
    (
        "counter!",
        "Adds 1 to the number at :key (0 when absent), as :inc! does.",
    ),
    ("dissoc!", "Removes :key from the db."),
    ("emit!", "Appends :val to the vector at :key."),
    ("wait", "Runs for :ticks ticks, then succeeds."),
    (
        "defer",
        "Launches the deferred action :action, runs until its result arrives under :aido/results, stores it at :into.",
    ),
    // Standard functions.
    (
        "rand",
        "A random float in [0, 1), or in [0, n) with one argument.",
    ),
    ("rand-int", "A random integer in [0, n)."),
    ("+", "The sum of the arguments."),
    (
        "-",
        "The first argument minus the others, or its negation alone.",
    ),
    ("*", "The product of the arguments."),
    ("/", "The first argument divided by the others."),
    ("min", "The smallest argument."),
    ("max", "The largest argument."),
    ("inc", "The argument plus 1."),
    ("dec", "The argument minus 1."),
    ("str", "The arguments' texts joined."),
    ("not", "true for nil and false, else false."),
    ("=", "Whether all the arguments are equal."),
];

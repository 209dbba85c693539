//! `game`: the aido tool (check, run, test, nodes, ...) with the game's own
//! node types and functions.

fn main() {
    aido::cli::main_with(aido_game_example::registry())
}

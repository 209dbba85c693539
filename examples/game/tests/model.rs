//! The node model designers use is the registry's own, written by the game's
//! build: this test fails when they part, and `WRITE_MODEL=1 cargo test`
//! writes it anew.

use aido_game_example::registry;

#[test]
fn the_model_file_is_the_registrys_model() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/game-nodes.edn");
    let model = aido::model::model_text(&registry().model());
    if std::env::var_os("WRITE_MODEL").is_some() {
        std::fs::write(path, &model).expect("game-nodes.edn is writable");
    }
    let on_disk = std::fs::read_to_string(path).expect("game-nodes.edn exists");
    assert_eq!(
        on_disk, model,
        "run `WRITE_MODEL=1 cargo test` to update game-nodes.edn"
    );
}

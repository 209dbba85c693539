//! examples/npc.edn written by hand in Rust over aido's db, with a key
//! hint per site as the compiled tree keeps one for each key a node names:
//! the reference `cargo bench --bench tick` compares npc's tick with
//! (checked there to reach the same db), and `site_cost npc-hand` counts.

use std::cell::Cell;

use aido::value::{Keyword, Map};
use aido::{Status, Value};

/// A keyword key read or written at one place of the hand-written npc,
/// with a hint of where it sat last time: what the compiled tree keeps
/// for each key a node names.
pub struct Site {
    key: Keyword,
    hint: Cell<usize>,
}

impl Site {
    fn new(name: &str) -> Site {
        Site {
            key: Keyword::new(name),
            hint: Cell::new(0),
        }
    }

    /// The key's index: the hinted one if it holds the key, else found
    /// with `Map::keyword_position` (a short scan of a small db, a hash
    /// probe of a larger one), as aido finds it.
    #[inline(always)]
    fn find(&self, db: &Map) -> Option<usize> {
        let hint = self.hint.get();
        if db.keyword_at(hint, self.key) {
            return Some(hint);
        }
        let found = db.keyword_position(self.key);
        if let Some(i) = found {
            self.hint.set(i);
        }
        found
    }

    #[inline(always)]
    fn get<'d>(&self, db: &'d Map) -> Option<&'d Value> {
        self.find(db).map(|i| &db[i])
    }

    /// The key's slot, inserted as nil if missing.
    #[inline(always)]
    fn slot<'d>(&self, db: &'d mut Map) -> &'d mut Value {
        let i = match self.find(db) {
            Some(i) => i,
            None => db.insert_full(Value::Keyword(self.key), Value::Nil).0,
        };
        &mut db[i]
    }
}

/// examples/npc.edn written by hand, one [`Site`] per key a node names.
pub struct HandNpc {
    hunger_test: Site,
    eat_action: Site,
    eat_hunger: Site,
    enemy: Site,
    courage: Site,
    fight_action: Site,
    flee_action: Site,
    hunger_inc: Site,
    steps: Site,
    wander: Site,
    wander_action: Site,
    eat: Keyword,
    fight: Keyword,
    flee: Keyword,
    wander_kw: Keyword,
}

impl HandNpc {
    pub fn new() -> HandNpc {
        HandNpc {
            hunger_test: Site::new("hunger"),
            eat_action: Site::new("action"),
            eat_hunger: Site::new("hunger"),
            enemy: Site::new("enemy"),
            courage: Site::new("courage"),
            fight_action: Site::new("action"),
            flee_action: Site::new("action"),
            hunger_inc: Site::new("hunger"),
            steps: Site::new("steps"),
            wander: Site::new("wander"),
            wander_action: Site::new("action"),
            eat: Keyword::new("eat"),
            fight: Keyword::new("fight"),
            flee: Keyword::new("flee"),
            wander_kw: Keyword::new("wander"),
        }
    }

    /// `[:greater-than? {:key k :val n}]`.
    #[inline(always)]
    fn greater(site: &Site, db: &Map, n: i64) -> bool {
        matches!(site.get(db), Some(Value::Int(x)) if *x > n)
    }

    /// `[:inc! {:key k}]`: false on overflow or a value that is no integer.
    #[inline(always)]
    fn inc(site: &Site, db: &mut Map) -> bool {
        let slot = site.slot(db);
        match slot {
            Value::Int(x) => match x.checked_add(1) {
                Some(y) => {
                    *x = y;
                    true
                }
                None => false,
            },
            Value::Nil => {
                *slot = Value::Int(1);
                true
            }
            _ => false,
        }
    }

    /// One tick of npc.
    pub fn tick(&self, db: &mut Map) -> Status {
        if Self::greater(&self.hunger_test, db, 8) {
            *self.eat_action.slot(db) = Value::Keyword(self.eat);
            *self.eat_hunger.slot(db) = Value::Int(0);
            return Status::Success;
        }
        if self.enemy.find(db).is_some() {
            if Self::greater(&self.courage, db, 5) {
                *self.fight_action.slot(db) = Value::Keyword(self.fight);
            } else {
                *self.flee_action.slot(db) = Value::Keyword(self.flee);
            }
            return Status::Success;
        }
        if !(Self::inc(&self.hunger_inc, db) && Self::inc(&self.steps, db)) {
            return Status::Error;
        }
        for _ in 0..3 {
            if !Self::inc(&self.wander, db) {
                return Status::Error;
            }
        }
        *self.wander_action.slot(db) = Value::Keyword(self.wander_kw);
        Status::Success
    }
}

//! `Map` checked against `IndexMap` as the reference.

use super::*;
use proptest::prelude::*;

type Reference = indexmap::IndexMap<Value, Value, FastBuildHasher>;

/// Keys of three kinds, so that keywords (found by their own path),
/// integers and strings all go through the scan and the index.
/// (Cases with fewer than 20 keys have keyword keys only, so their maps
/// keep keys as keyword indices on both sides of the scan limit.)
fn key(i: u8) -> Value {
    match i {
        0 => Value::keyword("aido/error"),
        1 => Value::keyword("aido/running"),
        2..20 => Value::keyword(&format!("k{i}")),
        20..30 => Value::Int(i64::from(i)),
        _ => Value::string(&format!("s{i}")),
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, i64),
    /// `Map::push` of a key the reference does not hold (an insert else).
    Push(u8, i64),
    ShiftRemove(u8),
    SwapRemove(u8),
    ShiftInsert(usize, u8, i64),
    Entry(u8, i64),
    Retain(u8),
    /// `Map::retain_from` of a position (possibly past the end).
    RetainFrom(usize, u8),
    Clear,
    /// Sorted by value (both sorts are stable).
    Sort,
    Reserve(usize),
    /// The map replaced by its clone.
    Clone,
}

fn op(keys: u8) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..keys, any::<i64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        3 => (0..keys, any::<i64>()).prop_map(|(k, v)| Op::Push(k, v)),
        5 => (0..keys).prop_map(Op::ShiftRemove),
        2 => (0..keys).prop_map(Op::SwapRemove),
        1 => (0..40usize, 0..keys, any::<i64>()).prop_map(|(i, k, v)| Op::ShiftInsert(i, k, v)),
        2 => (0..keys, any::<i64>()).prop_map(|(k, v)| Op::Entry(k, v)),
        1 => (2..6u8).prop_map(Op::Retain),
        2 => (0..45usize, 2..6u8).prop_map(|(i, m)| Op::RetainFrom(i, m)),
        1 => Just(Op::Clear),
        1 => Just(Op::Sort),
        1 => (0..20usize).prop_map(Op::Reserve),
        1 => Just(Op::Clone),
    ]
}

/// Everything a user can observe, compared with the reference, and the
/// index (when there is one) pointing every key at its position.
fn check_same(map: &Map, reference: &Reference, keys: u8) {
    assert_eq!(map.len(), reference.len());
    assert!(map.iter().eq(reference.iter()), "order");
    assert!(map.keys().rev().eq(reference.keys().rev()));
    for i in 0..keys {
        let k = key(i);
        assert_eq!(map.get(&k), reference.get(&k));
        assert_eq!(map.get_index_of(&k), reference.get_index_of(&k));
        if let Value::Keyword(kw) = k {
            assert_eq!(map.keyword_position(kw), reference.get_index_of(&k));
        }
    }
    if let Some(index) = map.index() {
        assert_eq!(index.positions.len(), map.len());
        let mut reserved = 0;
        for (at, (k, _)) in map.iter().enumerate() {
            let found = index.positions.find(hash(k), |&p| p as usize == at);
            assert_eq!(found, Some(&(at as u32)));
            reserved |= reserved_bit(k.as_keyword());
        }
        assert_eq!(index.reserved, reserved);
    }
    assert!(map.len() <= SCAN_LIMIT || map.index().is_some());
    // The slots: the entries, then vacant room; the length in slot 0 and
    // nowhere else; keys kept as values exactly while one needs it.
    assert_eq!(map.len(), map.live().len());
    for (at, slot) in map.slots.iter().enumerate() {
        assert_eq!(slot.key == VACANT, at >= map.len(), "slot {at}");
        if at > 1 {
            assert_eq!(slot.len, 0);
        }
    }
    check_filter(map);
    let needs_keys = map.live().iter().any(|s| s.key == OTHER);
    assert!(map.keeps_keys() || !needs_keys);
    if map.keeps_keys() {
        assert_eq!(map.value_keys().len(), map.len());
        for (at, slot) in map.live().iter().enumerate() {
            assert_eq!(slot.key, code_of(&map.value_keys()[at]));
        }
    }
    // Equal to the same entries in another order, unequal to a change.
    let reversed: Map = reference
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(map, &reversed);
    assert_eq!(
        Value::Map(Box::new(map.clone())),
        Value::Map(Box::new(reversed.clone()))
    );
    if let Some((k, v)) = reference.first() {
        let mut changed = reversed;
        changed.insert(k.clone(), Value::Vector(crate::value::thin_vec![v.clone()]));
        assert_ne!(map, &changed);
    }
}

/// The filter of keyword keys in slot 1: exact in a map without an index,
/// a superset in one with; and every keyword it proves absent is absent,
/// tried for the keys the tests use and for keywords whose bits they share.
fn check_filter(map: &Map) {
    let exact = map.exact_filter();
    if let Some(second) = map.slots.get(1) {
        if map.index().is_none() {
            assert_eq!(second.len, exact, "the filter of a map without an index");
        } else {
            assert_eq!(second.len & exact, exact, "a superset with an index");
        }
    }
    for k in probes() {
        let present = map.iter().any(|(key, _)| key.as_keyword() == Some(k));
        assert!(!(present && map.lacks_keyword(k)), "{k} said absent");
        if map.index().is_none() && map.capacity() > 1 {
            assert_eq!(map.lacks_keyword(k), exact & filter_bit(k.index()) == 0);
        }
        assert_eq!(map.keyword_position(k).is_some(), present, "{k}");
    }
}

/// Keywords to look up: the tests' keys, and 64 more interned one after the
/// other, so that every bit of the filter is shared by keys present and
/// absent.
fn probes() -> Vec<Keyword> {
    (0..40u8)
        .filter_map(|i| key(i).as_keyword())
        .chain((0..64).map(|i| Keyword::new(&format!("probe-{i}"))))
        .collect()
}

/// The `i`th keyword key of the tests (below 18).
fn kw(i: u8) -> Value {
    key(i + 2)
}

/// Runs `ops` on a `Map` and on the reference, comparing after each.
fn same_as_the_reference(keys: u8, ops: Vec<Op>) {
    let mut map = Map::new();
    let mut reference = Reference::default();
    for op in ops {
        match op {
            Op::Insert(k, v) => {
                let (k, v) = (key(k % keys), Value::Int(v));
                assert_eq!(
                    map.insert_full(k.clone(), v.clone()),
                    reference.insert_full(k, v)
                );
            }
            Op::Push(k, v) => {
                let (k, v) = (key(k % keys), Value::Int(v));
                if reference.contains_key(&k) {
                    assert_eq!(map.insert(k.clone(), v.clone()), reference.insert(k, v));
                } else {
                    assert_eq!(
                        map.push(k.clone(), v.clone()),
                        reference.insert_full(k, v).0
                    );
                }
            }
            Op::ShiftRemove(k) => {
                let k = key(k % keys);
                assert_eq!(map.shift_remove_full(&k), reference.shift_remove_full(&k));
            }
            Op::SwapRemove(k) => {
                let k = key(k % keys);
                assert_eq!(map.swap_remove(&k), reference.swap_remove(&k));
            }
            Op::ShiftInsert(i, k, v) => {
                let (k, v) = (key(k % keys), Value::Int(v));
                let i = i.min(
                    reference
                        .len()
                        .saturating_sub(usize::from(reference.contains_key(&k))),
                );
                assert_eq!(
                    map.shift_insert(i, k.clone(), v.clone()),
                    reference.shift_insert(i, k, v)
                );
            }
            Op::Entry(k, v) => {
                let k = key(k % keys);
                let index = reference.get_index_of(&k).unwrap_or(reference.len());
                let entry = map.entry(k.clone());
                assert_eq!(entry.index(), index);
                assert_eq!(entry.key(), &k);
                let got = entry.or_insert(Value::Int(v)).clone();
                assert_eq!(&got, reference.entry(k).or_insert(Value::Int(v)));
            }
            Op::Retain(m) => {
                let keep =
                    |k: &Value, _: &mut Value| !k.to_string().len().is_multiple_of(usize::from(m));
                map.retain(keep);
                reference.retain(keep);
            }
            Op::RetainFrom(from, m) => {
                let keep =
                    |k: &Value, _: &mut Value| !k.to_string().len().is_multiple_of(usize::from(m));
                // Only the entries from `from` on are looked at.
                let mut looked_at = 0;
                map.retain_from(from, |k, v| {
                    looked_at += 1;
                    keep(k, v)
                });
                assert_eq!(looked_at, reference.len().saturating_sub(from));
                let mut at = 0;
                reference.retain(|k, v| {
                    at += 1;
                    at <= from || keep(k, v)
                });
            }
            Op::Clear => {
                map.clear();
                reference.clear();
            }
            Op::Sort => {
                let by_value =
                    |_: &Value, v1: &Value, _: &Value, v2: &Value| v1.as_int().cmp(&v2.as_int());
                map.sort_by(by_value);
                reference.sort_by(by_value);
            }
            Op::Reserve(n) => {
                map.reserve(n);
                reference.reserve(n);
            }
            Op::Clone => map = map.clone(),
        }
        check_same(&map, &reference, keys);
    }
}

/// Random operation sequences: the tests below run 512 cases between
/// them, in four parts that the test harness runs in parallel.
fn operations() -> impl Strategy<Value = (u8, Vec<Op>)> {
    (
        3..40u8,
        (3..40u8).prop_flat_map(|k| prop::collection::vec(op(k), 0..200)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn behaves_as_an_index_map((keys, ops) in operations()) {
        same_as_the_reference(keys, ops);
    }

    #[test]
    fn behaves_as_an_index_map_2((keys, ops) in operations()) {
        same_as_the_reference(keys, ops);
    }

    #[test]
    fn behaves_as_an_index_map_3((keys, ops) in operations()) {
        same_as_the_reference(keys, ops);
    }

    #[test]
    fn behaves_as_an_index_map_4((keys, ops) in operations()) {
        same_as_the_reference(keys, ops);
    }
}

#[test]
fn crosses_the_scan_limit_both_ways_and_keeps_its_order() {
    let mut map = Map::new();
    let mut reference = Reference::default();
    for round in 0..3i64 {
        for i in 0..30u8 {
            map.insert(key(i), Value::Int(round));
            reference.insert(key(i), Value::Int(round));
            check_same(&map, &reference, 30);
        }
        for i in (0..30u8).filter(|i| i % 8 != round as u8) {
            assert_eq!(map.shift_remove(&key(i)), reference.shift_remove(&key(i)));
            check_same(&map, &reference, 30);
        }
        assert!(
            map.index().is_none(),
            "a map of {} entries drops its index",
            map.len()
        );
    }
}

#[test]
fn a_small_map_holds_what_it_needs() {
    // A db of five keyword keys: the map's 24 bytes and five slots of 24
    // (a 4-byte keyword code, the length in slot 0 and a 16-byte value).
    assert_eq!(size_of::<Map>(), 24);
    assert_eq!(size_of::<Slot>(), 24);
    let mut map = Map::with_capacity(4);
    for i in 0..5 {
        map.insert(key(i * 7), Value::Nil);
    }
    // Grown one entry at a time, not doubled.
    assert_eq!(map.capacity(), 5);
    assert!(map.index().is_none());
    // Keyword keys are stored as their index until a key of another
    // type comes.
    let mut keywords = Map::with_capacity(4);
    for i in 0..5 {
        keywords.insert(key(i), Value::Int(i.into()));
    }
    assert!(keywords.more.is_none() && keywords.capacity() == 5);
    assert_eq!(
        keywords.get_index(4),
        Some((&Value::keyword("k4"), &Value::Int(4)))
    );
    keywords.insert(Value::Int(-1), Value::Nil);
    assert!(keywords.keeps_keys());
    assert_eq!(keywords.keyword_position(Keyword::new("k4")), Some(4));
    assert_eq!(
        keywords.get_index(4),
        Some((&Value::keyword("k4"), &Value::Int(4)))
    );
    // A db of 8 keys that holds a ninth during each tick builds its
    // index once.
    for i in 5..8 {
        map.insert(key(i * 7), Value::Nil);
    }
    map.insert(key(8), Value::Nil);
    let built = map.index().map(std::ptr::from_ref);
    for _ in 0..3 {
        map.shift_remove(&key(8));
        map.insert(key(8), Value::Nil);
        assert_eq!(map.index().map(std::ptr::from_ref), built);
    }
}

#[test]
fn a_map_of_distinct_keywords_is_taken_over_as_it_is() {
    // Below, at and above the scan limit: the same map as one built by
    // inserting, its index built when it needs one.
    for n in 0..20u8 {
        let entries: Vec<(Keyword, Value)> = (0..n)
            .map(|i| match key(i) {
                Value::Keyword(k) => (k, Value::Int(i.into())),
                other => panic!("key {i} is {other}"),
            })
            .collect();
        let map = Map::from_distinct_keywords(entries.len(), entries);
        let reference: Reference = (0..n).map(|i| (key(i), Value::Int(i.into()))).collect();
        check_same(&map, &reference, 20);
        assert!(map.more.is_none() || n > SCAN_LIMIT as u8);
        assert_eq!(
            map.capacity(),
            usize::from(n),
            "room for each entry, no more"
        );
    }
}

#[test]
fn the_filter_follows_every_mutation() {
    // Each mutation on maps of 1, 2, 6 and 12 keyword keys (with room for
    // one entry, for more, and with an index), then the filter checked
    // against the keys: a mutation that forgot it fails here.
    type Mutation = fn(&mut Map);
    let mutations: [(&str, Mutation); 20] = [
        ("insert new", |m| _ = m.insert(kw(17), Value::Nil)),
        ("insert again", |m| _ = m.insert(kw(0), Value::Int(1))),
        ("insert other", |m| _ = m.insert(Value::Int(7), Value::Nil)),
        ("push", |m| _ = m.push(kw(16), Value::Nil)),
        ("shift_remove first", |m| _ = m.shift_remove(&kw(0))),
        ("shift_remove second", |m| _ = m.shift_remove(&kw(1))),
        ("shift_remove last", |m| {
            let last = m.last().map(|(k, _)| k.clone());
            _ = last.map(|k| m.shift_remove(&k));
        }),
        ("swap_remove first", |m| _ = m.swap_remove(&kw(0))),
        ("swap_remove second", |m| _ = m.swap_remove(&kw(1))),
        ("shift_insert", |m| {
            _ = m.shift_insert(0, kw(15), Value::Nil)
        }),
        ("shift_insert moved", |m| {
            let last = m.last().map(|(k, _)| k.clone());
            _ = last.map(|k| m.shift_insert(0, k, Value::Nil));
        }),
        ("entry insert", |m| {
            _ = m.entry(kw(14)).or_insert(Value::Nil)
        }),
        ("entry remove", |m| {
            if let Entry::Occupied(e) = m.entry(kw(0)) {
                e.shift_remove();
            }
        }),
        ("retain", |m| m.retain(|k, _| k != &kw(1))),
        ("clear", Map::clear),
        ("sort_by", |m| {
            m.sort_by(|k1, _, k2, _| k2.to_string().cmp(&k1.to_string()))
        }),
        ("reserve", |m| m.reserve(9)),
        ("clone", |m| *m = m.clone()),
        ("collect", |m| {
            *m = std::mem::take(m).into_iter().rev().collect()
        }),
        ("extend", |m| {
            m.extend([(kw(13), Value::Nil), (kw(0), Value::Nil)])
        }),
    ];
    for n in [1, 2, 6, 12] {
        for (name, mutate) in mutations {
            let entries: Vec<(Keyword, Value)> = (0..n)
                .filter_map(|i| kw(i).as_keyword().map(|k| (k, Value::Int(i.into()))))
                .collect();
            for mut map in [
                Map::from_distinct_keywords(entries.len(), entries.clone()),
                entries
                    .iter()
                    .map(|(k, v)| (Value::Keyword(*k), v.clone()))
                    .collect(),
            ] {
                mutate(&mut map);
                check_filter(&map);
                // A key gone is proved absent, unless a key left shares
                // its bit.
                for (k, _) in &entries {
                    if map.index().is_none()
                        && map.keyword_position(*k).is_none()
                        && map.exact_filter() & filter_bit(k.index()) == 0
                        && map.capacity() > 1
                    {
                        assert!(map.lacks_keyword(*k), "{name}: {k} after {n} keys");
                    }
                }
            }
        }
    }
}

#[test]
fn a_small_removal_keeps_a_shared_bit_and_clears_a_lone_one() {
    // Two keywords whose codes share a bit of the filter, and others that
    // do not: removing one of the pair leaves the bit for the other, and
    // removing a lone key clears its bit (the filter of a map without an
    // index stays exact).
    let first = kw(0).as_keyword().map_or(0, Keyword::index);
    let twin = (0..200)
        .map(|i| Keyword::new(&format!("twin-{i}")))
        .find(|k| k.index() != first && k.index() % 32 == first % 32);
    let Some(twin) = twin else {
        panic!("no keyword shares a bit with {}", kw(0));
    };
    let lone = (1..18)
        .map(kw)
        .find(|k| k.as_keyword().is_some_and(|k| k.index() % 32 != first % 32));
    let Some(lone) = lone else {
        panic!("no keyword of another bit");
    };
    for remove_at in 0..3 {
        let keys = [kw(0), Value::Keyword(twin), lone.clone()];
        let mut map: Map = keys.iter().map(|k| (k.clone(), Value::Nil)).collect();
        map.insert(keys[remove_at].clone(), Value::Int(7));
        let removed = map.shift_remove_index(remove_at);
        assert_eq!(removed, Some((keys[remove_at].clone(), Value::Int(7))));
        let rest: Vec<&Value> = keys.iter().filter(|k| *k != &keys[remove_at]).collect();
        assert!(map.keys().eq(rest.iter().copied()), "the order of the rest");
        check_filter(&map);
        for k in &rest {
            assert!(!map.lacks_keyword(k.as_keyword().unwrap_or(twin)));
        }
        let gone = keys[remove_at].as_keyword().unwrap_or(twin);
        assert_eq!(map.lacks_keyword(gone), remove_at == 2, "{gone}");
        assert_eq!(map.capacity(), 3, "the room stays");
    }
}

#[test]
fn a_map_of_distinct_keywords_keeps_a_keyword_interned_late() {
    // A keyword interned after `KEYWORD_KEYS` others is kept as a value:
    // the map built from pairs is the one built by inserting, whether the
    // late keyword comes first, in the middle or last.
    let late = (0..=KEYWORD_KEYS)
        .map(|i| Keyword::new(&format!("late-{i}")))
        .find(|k| k.index() >= KEYWORD_KEYS);
    let Some(late) = late else {
        panic!("no keyword interned at {KEYWORD_KEYS} or later");
    };
    for at in [0, 1, 2] {
        for n in [3u8, 12] {
            let mut entries: Vec<(Keyword, Value)> = (0..n - 1)
                .filter_map(|i| kw(i).as_keyword().map(|k| (k, Value::Int(i.into()))))
                .collect();
            entries.insert(at, (late, Value::Int(-1)));
            let map = Map::from_distinct_keywords(entries.len(), entries.clone());
            let reference: Reference = entries
                .iter()
                .map(|(k, v)| (Value::Keyword(*k), v.clone()))
                .collect();
            check_same(&map, &reference, 20);
            check_filter(&map);
            assert_eq!(map.get(&Value::Keyword(late)), Some(&Value::Int(-1)));
        }
    }
}

#[test]
fn removing_the_last_two_keys_of_a_full_small_map_one_by_one_keeps_the_rest() {
    // A db of eight keys whose last two go, one after the other, as a halt
    // takes out `:aido/memory` (second to last: the last entry moves up)
    // and then `:aido/running` (the last: nothing moves), then both come
    // back by `push` into the room left: every value stays with its key,
    // the filter stays exact, and nothing is allocated anew.
    let keys: Vec<Value> = (0..8).map(kw).collect();
    let mut map: Map = keys
        .iter()
        .zip(0..)
        .map(|(k, i)| (k.clone(), Value::Int(i)))
        .collect();
    let room = map.capacity();
    for (at, expect) in [(6, 6), (6, 7)] {
        let removed = map.shift_remove_index(at);
        assert_eq!(
            removed,
            Some((keys[expect].clone(), Value::Int(expect as i64)))
        );
        check_filter(&map);
    }
    assert_eq!(map.len(), 6);
    let rest: Vec<(Value, Value)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let kept: Vec<(Value, Value)> = (0..6)
        .map(|i| (keys[i].clone(), Value::Int(i as i64)))
        .collect();
    assert_eq!(rest, kept, "the first six, in order");
    for i in [6, 7] {
        map.push(keys[i].clone(), Value::Int(i as i64));
        check_filter(&map);
    }
    assert_eq!(map.capacity(), room, "the room stays");
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(map.get(k), Some(&Value::Int(i as i64)), "{k}");
    }
}

#[test]
fn retain_from_takes_random_entries_out_in_order_against_a_vec() {
    // A plain list of the entries as the model: random positions from
    // which to start and random entries taken out, on maps below and above
    // the scan limit, with keyword and string keys; afterwards the order
    // is the model's and every key is found where it is (the index right).
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below.max(1) as u64) as usize
    };
    for round in 0..300 {
        let len = next(60);
        let strings = round % 3 == 0;
        let key = |i: usize| {
            if strings && i.is_multiple_of(2) {
                Value::string(&format!("n{i}"))
            } else {
                Value::keyword(&format!("n{i}"))
            }
        };
        let mut map = Map::new();
        let mut model: Vec<(Value, Value)> = Vec::new();
        for i in 0..len {
            map.insert(key(i), Value::Int(i as i64));
            model.push((key(i), Value::Int(i as i64)));
        }
        let from = next(len + 2);
        let gone: Vec<bool> = (0..len).map(|_| next(3) == 0).collect();
        let out = |v: &Value| v.as_int().is_some_and(|i| gone[i as usize]);
        map.retain_from(from, |_, v| !out(v));
        let mut at = 0;
        model.retain(|(_, v)| {
            at += 1;
            at <= from || !out(v)
        });
        assert!(
            map.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .eq(model.clone()),
            "round {round}"
        );
        for (i, (k, v)) in model.iter().enumerate() {
            assert_eq!(map.get_full(k), Some((i, k, v)), "round {round}");
        }
        for i in 0..len {
            if !model.iter().any(|(k, _)| *k == key(i)) {
                assert_eq!(map.get(&key(i)), None, "round {round}");
            }
        }
        check_filter(&map);
    }
}

#[test]
fn removing_the_second_to_last_key_of_a_small_map_keeps_the_rest_and_its_filter() {
    // The halt cycle's removal of `:aido/memory` before `:aido/running`:
    // the last entry moves into the removed one's slot; the filter keeps
    // the removed key's bit only if a key that stays shares it (before it,
    // or the last), checked exactly by `check_same`.
    // The keywords the library interns first (more than 40 of them): codes
    // below `KEYWORD_KEYS` whichever tests ran before, 32 apart sharing a bit.
    let names: Vec<Keyword> = (0..42).map(Keyword::from_index).collect();
    let sharing = |k: Keyword| {
        names
            .iter()
            .copied()
            .find(|o| *o != k && (o.index() ^ k.index()).is_multiple_of(32))
    };
    let removed = names[40];
    let Some(twin) = sharing(removed) else {
        panic!("no keyword shares a bit with {removed}")
    };
    let others: Vec<Keyword> = names
        .iter()
        .copied()
        .filter(|k| !(k.index() ^ removed.index()).is_multiple_of(32))
        .take(SCAN_LIMIT - 1)
        .collect();
    for len in 3..=SCAN_LIMIT {
        // The twin nowhere, before the removed key, or last.
        for twin_at in [None, Some(0), Some(len - 1)] {
            let mut keys: Vec<Keyword> = others.iter().copied().take(len - 2).collect();
            keys.push(removed);
            keys.push(others[len - 2]);
            if let Some(at) = twin_at {
                keys[at] = twin;
            }
            let pairs = keys
                .iter()
                .zip(0..)
                .map(|(k, v)| (Value::Keyword(*k), Value::Int(v)));
            let mut map: Map = pairs.clone().collect();
            let mut reference: Reference = pairs.collect();
            assert!(map.more.is_none());
            assert_eq!(
                map.shift_remove_index(len - 2),
                reference.shift_remove_index(len - 2)
            );
            check_same(&map, &reference, 0);
            assert_eq!(map.lacks_keyword(removed), twin_at.is_none());
        }
    }
}

#[test]
fn removing_a_keyword_from_the_last_two_keeps_the_rest_and_its_filter() {
    // The halt of a long action: `:aido/memory`, then `:aido/running`, the
    // db's last two entries, taken out in line. A key whose bit is its own
    // (`:aido/running`, `:aido/tree`) takes its bit with it; another keeps
    // it where a key that stays (before it, or the last) shares it, checked
    // exactly by `check_same`. Any other position or map (a map with its
    // box, the first two slots) is left alone.
    use crate::value::kw;
    // The keywords the library interns first (more than 40 of them): codes
    // below `KEYWORD_KEYS` whichever tests ran before, 32 apart sharing a bit.
    let names: Vec<Keyword> = (0..42).map(Keyword::from_index).collect();
    let twin_of = |k: Keyword| {
        names
            .iter()
            .copied()
            .find(|o| *o != k && (o.index() ^ k.index()).is_multiple_of(32))
    };
    for key in [kw::RUNNING, kw::TREE, kw::MEMORY, names[40]] {
        let own = key == kw::RUNNING || key == kw::TREE;
        let twin = twin_of(key).filter(|_| !own);
        let others: Vec<Keyword> = names
            .iter()
            .copied()
            .filter(|k| !(k.index() ^ key.index()).is_multiple_of(32))
            .take(SCAN_LIMIT)
            .collect();
        for len in 1..=SCAN_LIMIT {
            for at in len.saturating_sub(3)..len {
                // The twin nowhere, first, or last (when the key is not).
                let mut twin_places = vec![None];
                if let Some(t) = twin {
                    if at != 0 {
                        twin_places.push(Some((t, 0)));
                    }
                    if at != len - 1 {
                        twin_places.push(Some((t, len - 1)));
                    }
                }
                for twin_at in twin_places {
                    let mut keys: Vec<Keyword> = others.iter().copied().take(len - 1).collect();
                    keys.insert(at, key);
                    if let Some((t, i)) = twin_at {
                        keys[i] = t;
                    }
                    let pairs = keys
                        .iter()
                        .zip(0..)
                        .map(|(k, v)| (Value::Keyword(*k), Value::Int(v)));
                    let mut map: Map = pairs.clone().collect();
                    let mut reference: Reference = pairs.collect();
                    assert!(map.more.is_none());
                    // Not at `at`, or not the key named: nothing done.
                    for i in 0..=len {
                        if i != at {
                            assert_eq!(map.remove_tail_keyword(i, key), None);
                        }
                    }
                    let other = if key == kw::RUNNING {
                        kw::TREE
                    } else {
                        kw::RUNNING
                    };
                    assert_eq!(map.remove_tail_keyword(at, other), None);
                    // A destination that is not nil: nothing done (the
                    // slot vacated takes the destination's nil).
                    let mut dest = Value::Int(-1);
                    assert!(!map.swap_out_tail_keyword(at, key, &mut dest));
                    assert_eq!(dest, Value::Int(-1));
                    check_same(&map, &reference, 0);
                    let removed = map.remove_tail_keyword(at, key);
                    if at >= 2 && len - at <= 2 {
                        assert_eq!(removed, Some(Value::Int(at as i64)));
                        reference.shift_remove_index(at);
                        assert_eq!(map.lacks_keyword(key), twin_at.is_none());
                    } else {
                        // The first two slots keep the length and the
                        // filter, and only the last two entries are taken
                        // out so.
                        assert_eq!(removed, None);
                    }
                    check_same(&map, &reference, 0);
                    // Pushed again, it is found again.
                    if removed.is_some() {
                        let i = map.push(Value::Keyword(key), Value::Int(7));
                        assert_eq!(i, len - 1);
                        reference.insert(Value::Keyword(key), Value::Int(7));
                        check_same(&map, &reference, 0);
                    }
                }
            }
        }
    }
    // A map with its box (a key that is not a keyword): nothing done.
    let mut boxed: Map = [
        (Value::from("s"), Value::Int(0)),
        (Value::Keyword(names[1]), Value::Int(1)),
        (Value::Keyword(kw::MEMORY), Value::Int(2)),
        (Value::Keyword(kw::RUNNING), Value::Int(3)),
    ]
    .into_iter()
    .collect();
    assert_eq!(boxed.remove_tail_keyword(2, kw::MEMORY), None);
    assert_eq!(boxed.remove_tail_keyword(3, kw::RUNNING), None);
    assert_eq!(boxed.len(), 4);
}

/// [`Map::push_keyword`], or with `swap` [`Map::push_keyword_swap`],
/// which must leave nil where the value was.
fn push_keyword_by(map: &mut Map, key: Keyword, value: Value, swap: bool) -> usize {
    if !swap {
        return map.push_keyword(key, value);
    }
    let mut place = value;
    let at = map.push_keyword_swap(key, &mut place);
    assert_eq!(place, Value::Nil);
    at
}

#[test]
fn pushing_a_keyword_in_line_appends_it_as_push_does() {
    // The start after a halt: `:aido/memory` or `:aido/running` appended
    // where the halt left a vacant slot (the store in line, or the swap
    // with the slot's nil), and every other map (no room, a map at the
    // scan limit, one with its box, the first entries of an empty map)
    // through `Map::push`, alike.
    use crate::value::kw;
    let names: Vec<Keyword> = (0..42)
        .map(Keyword::from_index)
        .filter(|k| *k != kw::MEMORY && *k != kw::RUNNING)
        .collect();
    for len in 0..=SCAN_LIMIT + 1 {
        for key in [kw::MEMORY, kw::RUNNING] {
            for (room, swap) in [(false, false), (true, false), (false, true), (true, true)] {
                let pairs = names
                    .iter()
                    .take(len)
                    .zip(0..)
                    .map(|(k, v)| (Value::Keyword(*k), Value::Int(v)));
                let mut map: Map = pairs.clone().collect();
                let mut reference: Reference = pairs.collect();
                if room {
                    map.reserve(1);
                }
                let at = push_keyword_by(&mut map, key, Value::Int(99), swap);
                assert_eq!(at, len);
                reference.insert(Value::Keyword(key), Value::Int(99));
                check_same(&map, &reference, 0);
                assert!(!map.lacks_keyword(key));
            }
        }
    }
    // A map with its box (a key that is not a keyword).
    let mut boxed: Map = [
        (Value::from("s"), Value::Int(0)),
        (Value::Keyword(names[0]), Value::Int(1)),
    ]
    .into_iter()
    .collect();
    let mut reference: Reference = boxed.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    boxed.reserve(1);
    let mut swapped = boxed.clone();
    assert_eq!(boxed.push_keyword(kw::RUNNING, Value::Int(2)), 2);
    assert_eq!(
        push_keyword_by(&mut swapped, kw::RUNNING, Value::Int(2), true),
        2
    );
    reference.insert(Value::Keyword(kw::RUNNING), Value::Int(2));
    check_same(&boxed, &reference, 0);
    check_same(&swapped, &reference, 0);
}

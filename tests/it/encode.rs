//! The binary encoding of values (`value::encode` / `decode`): exactness on
//! the values that need care, and one error code for each kind of bad blob.
//! Random values and bytes are in fuzz.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use aido::read_value;
use aido::value::{BINARY_VERSION, BinaryErrorKind, decode, encode};

/// Decodes `bytes` and returns the error's code.
fn code(bytes: &[u8]) -> &'static str {
    decode(bytes).expect_err("a bad blob").code()
}

#[test]
fn floats_keep_their_bits_and_collections_their_kind() {
    let db = read_value(
        "{:nan ##NaN, :inf ##Inf, :-inf ##-Inf, :neg-zero -0.0, :v [1 2], :l (1 2), \
         :s #{:b :a}, :t #inst \"2026\", :c \\λ, :k :ns/k, :sym ns/sym, \"str\" nil}",
    )
    .unwrap();
    let bytes = encode(&db).unwrap();
    let back = decode(&bytes).unwrap();
    assert_eq!(back.to_string(), db.to_string());
    assert!(db.first_difference(&back).is_none());
    let get = |k: &str| back.get(&aido::Value::keyword(k)).unwrap().clone();
    match get("neg-zero") {
        aido::Value::Float(f) => assert!(f == 0.0 && f.is_sign_negative()),
        other => panic!("{other}"),
    }
    match get("nan") {
        aido::Value::Float(f) => assert!(f.is_nan()),
        other => panic!("{other}"),
    }
    assert!(matches!(get("l"), aido::Value::List(_)));
    assert!(matches!(get("v"), aido::Value::Vector(_)));
}

#[test]
fn names_are_written_once_then_referred_to() {
    let one = encode(&read_value("[:aido/running]").unwrap()).unwrap();
    let many = encode(&read_value("[:aido/running :aido/running :aido/running]").unwrap()).unwrap();
    // A reference is a tag and a one-byte index.
    assert_eq!(many.len(), one.len() + 2 * 2);
}

#[test]
fn each_bad_blob_is_an_error_with_its_code() {
    let v = BINARY_VERSION;
    assert_eq!(code(&[]), "B0001");
    assert_eq!(code(&[0, 0]), "B0002");
    assert_eq!(code(&[v + 1, 0]), "B0002");
    assert_eq!(code(&[v]), "B0003");
    assert_eq!(code(&[v, 99]), "B0004");
    assert_eq!(
        code(&[
            v, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
        ]),
        "B0005"
    );
    assert_eq!(code(&[v, 5, 2, 0xff, 0xfe]), "B0007");
    assert_eq!(code(&[v, 6, 0x80, 0xb0, 0x03]), "B0008"); // a surrogate
    assert_eq!(code(&[v, 9, 0]), "B0009");
    assert_eq!(code(&[v, 14, 5, 0, 0]), "B0010");
    assert_eq!(code(&[v, 13, 2, 0, 0, 0, 1]), "B0012");
    assert_eq!(code(&[v, 12, 2, 0, 0]), "B0013");
    assert_eq!(code(&[v, 0, 0]), "B0014");
    let err = decode(&[v, 0, 0]).unwrap_err();
    assert_eq!(err.kind, BinaryErrorKind::TrailingBytes(1));
    assert_eq!(err.offset, 2);
}

#[test]
fn a_length_larger_than_the_blob_allocates_nothing() {
    // A vector claiming 2^62 elements, and a string claiming 4 GiB: refused
    // by the length check before any allocation (an allocation that large
    // would abort the test process).
    let mut huge = vec![BINARY_VERSION, 10];
    huge.extend([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]);
    assert_eq!(code(&huge), "B0006");
    assert_eq!(
        code(&[BINARY_VERSION, 5, 0x80, 0x80, 0x80, 0x80, 0x10, b'a']),
        "B0006"
    );
}

#[test]
fn nesting_is_bounded_both_ways() {
    let depth = aido::value::MAX_DEPTH;
    // The deepest text the reader accepts encodes and decodes.
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let deepest = read_value(&text).unwrap();
    assert_eq!(decode(&encode(&deepest).unwrap()).unwrap(), deepest);
    // One more level, built by hand, is refused without recursing further.
    let mut blob = vec![BINARY_VERSION];
    for _ in 0..depth + 1 {
        blob.extend([10, 1]);
    }
    blob.extend([10, 0]);
    assert_eq!(code(&blob), "B0011");
    // A value built in Rust past the bound does not encode.
    let mut v = aido::Value::Nil;
    for _ in 0..depth + 1 {
        v = aido::Value::Vector(aido::value::thin_vec![v]);
    }
    assert_eq!(encode(&v).unwrap_err().kind, BinaryErrorKind::TooDeep);
}

/// A blob of version 1, written out by hand from the layout in
/// value/binary.rs. Every later version must still decode it to this value;
/// while version 1 is the one written, `encode` gives these bytes too.
#[test]
fn a_version_1_blob_reads_back() {
    #[rustfmt::skip]
    let v1: &[u8] = &[
        0x01,                                     // version 1
        0x0d, 0x05,                               // a map of 5 entries
        0x07, 0x01, b'k',                         // :k (name 0)
        0x0a, 0x04,                               // a vector of 4
        0x03, 0x02, 0x03, 0x03,                   // 1, -2 (zigzag)
        0x05, 0x02, 0xc3, 0xa9,                   // "é"
        0x06, 0x78,                               // \x
        0x07, 0x01, b's',                         // :s (name 1)
        0x0c, 0x02, 0x00, 0x01,                   // #{nil false}
        0x07, 0x01, b'l',                         // :l (name 2)
        0x0b, 0x00,                               // ()
        0x07, 0x01, b't',                         // :t (name 3)
        0x0e, 0x08, 0x01, b't', 0x09, 0x00,       // #t :k (symbol t: name 4; :k by reference)
        0x07, 0x01, b'f',                         // :f (name 5)
        0x04, 0, 0, 0, 0, 0, 0, 0, 0x80,          // -0.0
    ];
    let expected =
        read_value("{:k [1 -2 \"é\" \\x], :s #{nil false}, :l (), :t #t :k, :f -0.0}").unwrap();
    let back = decode(v1).unwrap();
    assert!(back.first_difference(&expected).is_none(), "{back}");
    assert_eq!(back.to_string(), expected.to_string());
    if BINARY_VERSION == 1 {
        assert_eq!(encode(&expected).unwrap(), v1);
    }
}

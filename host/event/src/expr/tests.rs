//! Behaviour tests: Data Prepper's examples (its docs and its Java tests), precedence, errors
//! with columns, and hostile input.

use serde_json::{Value, json};

use super::*;
use crate::event::{Event, Metadata};

fn event(data: Value) -> Event {
    Event::new(data, Metadata::new("event", 0))
}

fn eval(text: &str, data: Value) -> Result<Value, EvalError> {
    Expression::parse(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .evaluate(&event(data))
}

fn check(text: &str, data: Value) -> bool {
    Expression::parse_condition(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .matches(&event(data))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn parse_err(text: &str) -> ExprError {
    match Expression::parse(text) {
        Ok(e) => panic!("{text} parsed: {e:?}"),
        Err(e) => e,
    }
}

// ---- Data Prepper's conditional examples (GenericExpressionEvaluator_ConditionalIT) ----

#[test]
fn equality_and_null() {
    assert!(check("/status_code == 200", json!({"status_code": 200})));
    assert!(check("/status_code != 300", json!({"status_code": 200})));
    assert!(!check("/status_code == 200", json!({})));
    assert!(!check(
        "/success == /status_code",
        json!({"success": true, "status_code": 200})
    ));
    assert!(check(
        "/success != /status_code",
        json!({"success": true, "status_code": 200})
    ));
    assert!(check("/status_code != null", json!({"status_code": 200})));
    assert!(check("null != /status_code", json!({"status_code": 200})));
    assert!(check("/status_code == null", json!({"status_code": null})));
    assert!(check("/missing == null", json!({})));
    assert!(check("null == /response", json!({"status_code": 200})));
    assert!(!check("/response != null", json!({})));
    assert!(check("/sourceIp != null", json!({"sourceIp": [10, 20]})));
    assert!(!check("/sourceIp == null", json!({"sourceIp": {"a": "b"}})));
    assert!(check("/response == \"OK\"", json!({"response": "OK"})));
    assert!(
        !check("/code == \"200\"", json!({"code": 200})),
        "a string is not a number"
    );
    assert!(check(
        "/list == /copy",
        json!({"list": [1, "a"], "copy": [1, "a"]})
    ));
    assert!(!check(
        "/list == /copy",
        json!({"list": [1], "copy": [1.0]})
    ));
}

#[test]
#[expect(clippy::approx_constant, reason = "Data Prepper's test uses 3.14159")]
fn numbers_compare_across_java_types() {
    assert!(check("/pi == 3.14159", json!({"pi": 3.14159_f64})));
    assert!(check(
        "/value == 12345.678E12",
        json!({"value": 12345.678E12})
    ));
    assert!(check(
        "/value == 12345.678e-12",
        json!({"value": 12345.678e-12})
    ));
    assert!(check(
        "/value == 12345.0000012",
        json!({"value": 12345.0000012})
    ));
    // An event's double is read as a float, so it equals the float literal both ways.
    assert!(check(
        "/pi >= 3.14159 and /pi <= 3.14159",
        json!({"pi": 3.14159_f64})
    ));
    assert!(check("/n == 2.0", json!({"n": 2})));
    assert!(check(
        "/durationInNanos > 5000000000",
        json!({"durationInNanos": 6_000_000_000_i64})
    ));
    assert!(check("/status_code < 300", json!({"status_code": 200})));
    assert!(!check("/status_code <= 0", json!({"status_code": 200})));
    assert!(check("/status_code > 0", json!({"status_code": 200})));
    assert!(!check("/status_code >= 300", json!({"status_code": 200})));
    assert!(check("-/status_code == -200", json!({"status_code": 200})));
    assert!(check("/a >= 200 and /a < 300", json!({"a": 250})));
}

#[test]
fn boolean_operators_are_false_on_types_they_cannot_take() {
    // Data Prepper's invalidExpressionArguments: false, not an error.
    assert!(!check("/status_code >= 300", json!({"other": 200})));
    assert!(!check("/missing > 1", json!({})));
    assert!(
        check("not (/missing > 1)", json!({})),
        "the comparison itself is false"
    );
    assert!(!check(
        "/status_code != null and /status_code >= 300",
        json!({})
    ));
    assert!(!check(
        "/success < /status_code",
        json!({"success": true, "status_code": 200})
    ));
    assert!(!check("/success >= /missing", json!({"success": true})));
    assert!(!check("not /status_code", json!({"status_code": 200})));
    assert!(!check(
        "/status_code >= 200 and /n",
        json!({"status_code": 200, "n": 3})
    ));
    assert!(
        !check("/n or true", json!({"n": 3})),
        "`or` with a number is false, even with true"
    );
    assert!(!check("/s =~ \"a\"", json!({"s": 5})));
    assert!(
        !check("/missing !~ \"a\"", json!({})),
        "`!~` with null is false too"
    );
}

#[test]
fn and_or_not_and_parentheses() {
    let data = json!({"status_code_not_present": 200, "value": 10});
    assert!(check(
        "(/value  == 10) or ((/status_code >= 300) and (/novalue == 15))",
        data.clone()
    ));
    assert!(check(
        "(/status_code >= 300) or (/value == 10)",
        data.clone()
    ));
    assert!(check("not (/status_code >= 300)", data));
    assert!(check(
        "true == (/is_cool == true)",
        json!({"is_cool": true})
    ));
    assert!(!check("not /is_cool", json!({"is_cool": true})));
    assert!(check("not not /is_cool", json!({"is_cool": true})));
    assert!(check(
        "/success and /status_code == 200",
        json!({"success": true, "status_code": 200})
    ));
    assert!(check(
        "/success or /status_code == 200",
        json!({"success": false, "status_code": 200})
    ));
    assert!(check("/should_drop", json!({"should_drop": true})));
    assert!(!check("/should_drop", json!({"should_drop": false})));
    assert!(check(
        "/logs/2/should_drop",
        json!({"logs": [{}, {}, {"should_drop": true}]})
    ));
    assert!(check("true", json!({})));
}

#[test]
fn precedence() {
    // `and` and `or` are one level, left to right: `true or false and false` is
    // `(true or false) and false`.
    assert!(!check("true or false and false", json!({})));
    assert!(check("false and false or true", json!({})));
    // `not` binds to the primary: `not /a == false` is `(not /a) == false`.
    assert!(check("not /a == false", json!({"a": true})));
    assert!(!check("not (/a == false)", json!({"a": false})));
    // Relational binds tighter than equality: `1 < 2 == true`.
    assert!(check("1 < 2 == true", json!({})));
    // `* /` over `+ -`, left to right, unary minus tightest.
    assert_eq!(eval("2 + 3 * 4", json!({})).unwrap(), json!(14));
    assert_eq!(eval("(2 + 3) * 4", json!({})).unwrap(), json!(20));
    assert_eq!(eval("10 - 4 - 3", json!({})).unwrap(), json!(3));
    assert_eq!(eval("10 - (4 - 3)", json!({})).unwrap(), json!(9));
    assert_eq!(eval("-2 * 3", json!({})).unwrap(), json!(-6));
    assert_eq!(eval("- -2", json!({})).unwrap(), json!(2));
    assert_eq!(eval("7 % 4 * 2", json!({})).unwrap(), json!(6));
    // Arithmetic binds tighter than comparison, which binds tighter than `and`.
    assert!(check("/a + 1 > 2 and /a * 2 == 4", json!({"a": 2})));
    // Regex binds tighter than equality.
    assert!(check("/a =~ \"x.*\" == true", json!({"a": "xy"})));
    // `in` binds tighter than relational and equality.
    assert!(check("/a in {1, 2} == true", json!({"a": 2})));
}

#[test]
fn arithmetic_follows_java_types() {
    let data = json!({"i": 7, "j": 2, "l": 3_000_000_000_i64, "f": 1.5});
    assert_eq!(eval("/i + /j", data.clone()).unwrap(), json!(9));
    assert_eq!(eval("/i - /j", data.clone()).unwrap(), json!(5));
    assert_eq!(eval("/i * /j", data.clone()).unwrap(), json!(14));
    // Integer division gives a double.
    assert_eq!(eval("/i / /j", data.clone()).unwrap(), json!(3.5));
    assert_eq!(eval("/i % /j", data.clone()).unwrap(), json!(1));
    assert_eq!(
        eval("/l + /i", data.clone()).unwrap(),
        json!(3_000_000_007_i64)
    );
    assert_eq!(eval("/i + /f", data.clone()).unwrap(), json!(8.5));
    assert_eq!(eval("/f * 2", data.clone()).unwrap(), json!(3.0));
    // Floats are 32-bit and written with the shortest digits.
    assert_eq!(eval("0.1 + 0.2", json!({})).unwrap(), json!(0.3));
    assert_eq!(eval("/x * 1.1", json!({"x": 10})).unwrap(), json!(11.0));
    // An event's number that no arithmetic touched comes back exactly.
    assert_eq!(
        eval("/f", json!({"f": 0.123456789012})).unwrap(),
        json!(0.123456789012)
    );
    assert_eq!(
        eval(
            "/key1 * /key2 / /key3",
            json!({"key1": 10, "key2": 20, "key3": 5})
        )
        .unwrap(),
        json!(40.0)
    );
    assert_eq!(
        eval("-(/a - /b) * /c", json!({"a": 5, "b": 3, "c": 4})).unwrap(),
        json!(-8)
    );
    // `/value + length(/message)`, from the documentation.
    assert_eq!(
        eval(
            "/value + length(/message)",
            json!({"value": 3, "message": "abcd"})
        )
        .unwrap(),
        json!(7)
    );
    assert!(check("/bytes / 1024 < 10", json!({"bytes": 2048})));
}

#[test]
fn integer_overflow_wraps_as_in_java() {
    assert_eq!(
        eval("/a + 1", json!({"a": i32::MAX})).unwrap(),
        json!(i32::MIN)
    );
    assert_eq!(eval("/a * /a", json!({"a": i64::MAX})).unwrap(), json!(1));
    assert_eq!(
        eval("-/a", json!({"a": i64::MIN})).unwrap(),
        json!(i64::MIN)
    );
    assert_eq!(eval("/a % -1", json!({"a": i32::MIN})).unwrap(), json!(0));
    assert_eq!(
        eval("2147483648", json!({})).unwrap(),
        json!(2_147_483_648_i64)
    );
    let err = parse_err("99999999999999999999 + 1");
    assert_eq!(err.column, 1, "{err}");
    assert_eq!(
        eval("/a + 1", json!({"a": u64::MAX}))
            .unwrap_err()
            .to_string(),
        "the number at `/a` is beyond a 64-bit integer, which expressions cannot read"
    );
}

#[test]
fn division_by_zero_is_an_error_as_a_value() {
    assert!(matches!(
        eval("/a % 0", json!({"a": 1})),
        Err(EvalError::DivisionByZero { op: "%" })
    ));
    let err = eval("/a / 0", json!({"a": 1})).unwrap_err();
    assert!(matches!(err, EvalError::NotFinite { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "the expression's value is inf, which is not a JSON number (a division by zero?)"
    );
    // As in Java, the infinity still compares.
    assert!(check("/a / 0 > 1", json!({"a": 1})));
}

#[test]
fn arithmetic_type_errors_at_run_time() {
    let data = json!({"status": 200, "message": "msg", "f": 2.5});
    for text in [
        "/status + /message",
        "/status - /message",
        "/message * /status",
        "/status / /message",
        "/message + /status",
        "-/message",
        "/missing + 1",
        "/status % /f",
    ] {
        let err = eval(text, data.clone()).unwrap_err();
        assert!(
            matches!(err, EvalError::Operands { .. } | EvalError::Operand { .. }),
            "{text}: {err}"
        );
    }
    assert_eq!(
        eval("/status + /message", data.clone())
            .unwrap_err()
            .to_string(),
        "`+` cannot take an integer and a string"
    );
    assert_eq!(
        eval("-/message", data.clone()).unwrap_err().to_string(),
        "`-` cannot take a string"
    );
    // An arithmetic error inside a condition is the condition's error.
    let expression = Expression::parse_condition("/message + 1 > 2 or true").unwrap();
    assert!(expression.matches(&event(data)).is_err());
}

#[test]
fn string_concatenation() {
    let data = json!({"status_message": "a", "message": "b", "key": "value"});
    assert_eq!(eval("\"x\"+\"y\"", json!({})).unwrap(), json!("xy"));
    assert_eq!(
        eval("/status_message+/message", data.clone()).unwrap(),
        json!("ab")
    );
    assert_eq!(
        eval("/name + \"suffix\"", json!({"name": "n"})).unwrap(),
        json!("nsuffix")
    );
    assert_eq!(
        eval("\"prefix\" + /name", json!({"name": "n"})).unwrap(),
        json!("prefixn")
    );
    assert!(check(
        "/service + \".com\" == /url",
        json!({"service": "x", "url": "x.com"})
    ));
    assert!(check(
        "\"www.\" + /service != /url",
        json!({"service": "x", "url": "x.com"})
    ));
    let err = eval("\"time of \" + /timeInMs + \" ms\"", json!({"timeInMs": 5})).unwrap_err();
    assert_eq!(err.to_string(), "`+` cannot take a string and an integer");
}

#[test]
fn set_membership() {
    assert!(check(
        "/value in {200.222, 300.333, 400}",
        json!({"value": 400})
    ));
    assert!(!check(
        "/value in {200.222, 300.333, 400}",
        json!({"value": 400.222})
    ));
    assert!(check(
        "/value in {200.222, 300.333, 400}",
        json!({"value": 200.222})
    ));
    assert!(!check(
        "/value not in {200.222, 300.333, 400}",
        json!({"value": 400})
    ));
    assert!(check(
        "/value not in {200.222, 300.333, 400}",
        json!({"value": 800.222})
    ));
    assert!(check(
        "/color in {\"blue\", \"red\", \"yellow\", \"green\"}",
        json!({"color": "yellow"})
    ));
    assert!(!check(
        "/color in {\"blue\", \"red\"}",
        json!({"color": "gray"})
    ));
    assert!(check(
        "/color in {\"blue\", \"\", \"red\"}",
        json!({"color": ""})
    ));
    assert!(check(
        "/status_code in {200 , 300}",
        json!({"status_code": 200})
    ));
    assert!(check(
        "/status_code not in {200 , 300}",
        json!({"status_code": 400})
    ));
    assert!(check("/flag in {true , false}", json!({"flag": false})));
    // Java's `Set.contains`: `1` (an Integer) is not `1.0` (a Float).
    assert!(!check("/n in {1.0}", json!({"n": 1})));
    assert!(!check("/missing in {1}", json!({})));
    assert!(check("/missing not in {1}", json!({})));
    assert!(check("2 in {2,3}", json!({})));
    // Mixed members, `null`, a key, and a right side that is not a set literal are refused.
    assert_eq!(parse_err("/color in {\"blue\", 222.0}").column, 11);
    assert_eq!(parse_err("/a in {1, null}").column, 11);
    assert_eq!(parse_err("/a in {\"/b\"}").column, 8);
    for text in [
        "/a in ({200})",
        "/a in 5",
        "/a in 3.14",
        "/a in false",
        "\"Hello\" not in 5",
        "2 in {2,,}",
        "/a in {200,}",
        "/a in {}",
    ] {
        parse_err(text);
    }
    assert_eq!(parse_err("/a in /b").column, 7);
}

#[test]
fn regex_match_is_a_full_match() {
    let pattern = "/name =~ \".*dataprepper-[0-9]+\"";
    assert!(check(pattern, json!({"name": "dataprepper-0"})));
    assert!(check(pattern, json!({"name": "dataprepper-212"})));
    assert!(!check(pattern, json!({"name": "dataprepper-abc"})));
    assert!(!check(pattern, json!({"other": "dataprepper-abc"})));
    assert!(check(
        "/name !~ \".*dataprepper-[0-9]+\"",
        json!({"name": "dataprepper-abc"})
    ));
    assert!(!check(
        "/name !~ \".*dataprepper-[0-9]+\"",
        json!({"name": "dataprepper-0"})
    ));
    // `matches`, not `find`: a match inside the string is not enough.
    assert!(!check("/a =~ \"b\"", json!({"a": "abc"})));
    assert!(check("/a =~ \"a|abc\"", json!({"a": "abc"})));
    assert!(check("/msg=~\"[A-Za-z]\"", json!({"msg": "x"})));
    assert!(check("\"foo\" =~ \"f.*\"", json!({})));
    // A key on the right is compiled per event; one that does not compile does not match.
    assert!(check("/a =~ /p", json!({"a": "abc", "p": "a.c"})));
    assert!(!check("/a =~ /p", json!({"a": "abc", "p": "(("})));
}

#[test]
fn regex_errors_point_at_the_pattern() {
    let err = parse_err("/a =~ \"(ab\"");
    assert_eq!(err.column, 7, "{err}");
    assert!(err.message.contains("invalid regex \"(ab\""), "{err}");
    // Look-around is Java's, not the regex crate's: refused when parsed.
    assert_eq!(parse_err("/a =~ \"(?=x)\"").column, 7);
    // A pattern that compiles past the size limit.
    let err = parse_err("/a =~ \"(.{100}){100}\"");
    assert!(err.message.contains("compiles to more than"), "{err}");
    // Operands: a key or a string only.
    assert_eq!(parse_err("(true) =~ \"Hello?\"").column, 8);
    parse_err("\"foo\"=~3.14");
}

#[test]
fn typeof_checks_an_events_types() {
    assert!(check(
        "/status_code typeof integer",
        json!({"status_code": 200})
    ));
    assert!(!check(
        "/status_code typeof integer",
        json!({"status_code": "200"})
    ));
    assert!(check("/name typeof string", json!({"name": "test"})));
    assert!(check("/flag typeof boolean", json!({"flag": true})));
    assert!(check(
        "/value typeof long",
        json!({"value": 2_147_483_648_i64})
    ));
    assert!(check("/value typeof double", json!({"value": 1.5})));
    assert!(check("/items typeof array", json!({"items": [1, 2]})));
    assert!(check("/data typeof map", json!({"data": {"k": "v"}})));
    assert!(!check("/missing typeof map", json!({})));
    assert!(check(
        "not (/status_code typeof integer)",
        json!({"status_code": "200"})
    ));
    assert!(check(
        "/a typeof integer and /b typeof string",
        json!({"a": 1, "b": "x"})
    ));
    assert_eq!(parse_err("/a typeof /b").column, 11);
    assert_eq!(parse_err("/a typeof 2").column, 11);
}

#[test]
fn escaped_pointers() {
    assert!(check("\"/a b\" == 1", json!({"a b": 1})));
    // `~` is not a character of an unquoted key, as in the grammar.
    assert_eq!(parse_err("/a~1b == 2").column, 3);
    assert!(check("\"/a~1b/c~0d\" == 3", json!({"a/b": {"c~d": 3}})));
    assert!(
        check("\"/\" != null", json!({"x": 1})),
        "`\"/\"` is the whole event"
    );
    // Data Prepper's test: every character its keys may hold.
    let key = "ABCDEFGHIJKLMNOPQRSTUVWXYZ.-_abcdefghijklmnopqrstuvwxyz0123456789";
    assert!(check(&format!("\"/{key}\" == true"), json!({ key: true })));
    assert!(check(
        "/part1@part2.part3 != 111",
        json!({"part1@part2.part3": 112})
    ));
    // A quoted string that starts with `/` is a key (the grammar's `EscapedJsonPointer`)...
    assert!(check("/path == \"/p\"", json!({"path": "x", "p": "x"})));
    // ...unless it is a function's argument, and triple quotes make it a string.
    assert!(check(
        "/path == \"\"\"/path/to/route\"\"\"",
        json!({"path": "/path/to/route"})
    ));
    assert!(check("getMetadata(\"/k\") == null", json!({})));
    // A key with a character Data Prepper refuses.
    assert_eq!(parse_err("\"/a:b\" == 1").column, 1);
}

#[test]
fn strings_keep_their_escapes_as_written() {
    // Data Prepper strips the quotes and nothing else.
    assert_eq!(eval(r#""a\"b""#, json!({})).unwrap(), json!(r#"a\"b"#));
    assert_eq!(
        eval(r#"join("\\, ", /l)"#, json!({"l": [1, 2]})).unwrap(),
        json!("1, 2")
    );
}

// ---- functions ----

fn tagged_event(data: Value) -> Event {
    let mut metadata = Metadata::new("event", 0);
    metadata.add_tags(&["t1".to_owned(), "t2".to_owned(), "t3".to_owned()]);
    metadata.attributes.insert("key1".into(), json!("abcde"));
    metadata.attributes.insert("key2".into(), json!(2000));
    metadata.attributes.insert("key3".into(), json!(false));
    metadata
        .attributes
        .insert("nested".into(), json!({"inner": 1.5}));
    Event::new(data, metadata)
}

fn on_tagged(text: &str, data: Value) -> Value {
    Expression::parse(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .evaluate(&tagged_event(data))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn length_measures_strings_lists_and_maps() {
    assert_eq!(
        eval("length(/response)", json!({"response": "abcd"})).unwrap(),
        json!(4)
    );
    assert_eq!(eval("length(\"abc\")", json!({})).unwrap(), json!(3));
    assert_eq!(
        eval("length(/l)", json!({"l": [1, 2, 3]})).unwrap(),
        json!(3)
    );
    assert_eq!(
        eval("length(/m)", json!({"m": {"a": 1}})).unwrap(),
        json!(1)
    );
    assert_eq!(eval("length(/missing)", json!({})).unwrap(), json!(null));
    // Java counts UTF-16 units: an emoji is two.
    assert_eq!(eval("length(/s)", json!({"s": "é😀"})).unwrap(), json!(3));
    assert!(check("length(/response) == 4", json!({"response": "abcd"})));
    let err = eval("length(/n)", json!({"n": 5})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`length()` takes a string, a list or a map, but the value at `/n` is a number"
    );
    assert_eq!(
        eval("length(toJsonString())", json!({"a": 1})).unwrap(),
        json!(7)
    );
}

#[test]
fn has_tags_get_metadata_and_event_type() {
    assert_eq!(on_tagged("hasTags(\"t1\")", json!({})), json!(true));
    assert_eq!(on_tagged("hasTags(\"t1\",\"t2\")", json!({})), json!(true));
    assert_eq!(
        on_tagged("hasTags(\"t1\", \"t2\", \"t3\")", json!({})),
        json!(true)
    );
    assert_eq!(on_tagged("hasTags(\"t4\")", json!({})), json!(false));
    assert_eq!(on_tagged("hasTags(\"t3\",\"t4\")", json!({})), json!(false));
    assert_eq!(
        on_tagged("getMetadata(\"key1\") == \"abcde\"", json!({})),
        json!(true)
    );
    assert_eq!(
        on_tagged("getMetadata(\"key2\") == 2000", json!({})),
        json!(true)
    );
    assert_eq!(
        on_tagged("getMetadata(\"key3\") == false", json!({})),
        json!(true)
    );
    assert_eq!(
        on_tagged("getMetadata(\"/key1\") == \"abcde\"", json!({})),
        json!(true)
    );
    assert_eq!(
        on_tagged("getMetadata(\"key6\") == false", json!({})),
        json!(false)
    );
    assert_eq!(on_tagged("getMetadata(\"key6\")", json!({})), json!(null));
    assert_eq!(
        on_tagged("getMetadata(\"nested/inner\")", json!({})),
        json!(1.5)
    );
    assert_eq!(on_tagged("getMetadata(\"  \")", json!({})), json!(null));
    assert_eq!(
        on_tagged("getEventType() == \"event\"", json!({})),
        json!(true)
    );
    assert_eq!(
        on_tagged("getEventType() == \"LOG\"", json!({})),
        json!(false)
    );
    assert_eq!(
        on_tagged("getMetadata(\"key1\")+\"x\"+/k", json!({"k": "v"})),
        json!("abcdexv")
    );
    assert_eq!(
        on_tagged(
            "length(/key) + getMetadata(\"key2\")",
            json!({"key": "value"})
        ),
        json!(2005)
    );
    assert_eq!(
        on_tagged(
            "-length(/key) * -getMetadata(\"key2\")",
            json!({"key": "value"})
        ),
        json!(10000)
    );
}

#[test]
fn contains_and_starts_with() {
    let data = json!({"status": "abcde", "message": "abcdeabcde", "n": 1234});
    assert!(check("contains(\"abcde\",\"bcd\")", json!({})));
    assert!(check("contains(/status,\"ab\")", data.clone()));
    assert!(check("contains(\"xabcdex\",/status)", data.clone()));
    assert!(check("contains(/message,/status)", data.clone()));
    assert!(!check("contains(/unknown,/status)", data.clone()));
    assert!(!check("contains(/status,/unknown)", data.clone()));
    assert!(check(
        "/value == \"value-a\" and contains(/string, \"x/y/\")",
        json!({"value": "value-a", "string": "prefix/x/y/postfix"})
    ));
    assert!(check("startsWith(\"abcdeXYZ\",/status)", data.clone()));
    assert!(!check("startsWith(\"XYZabcde\",/status)", data.clone()));
    assert!(check("startsWith(/message, \"abc\")", data.clone()));
    let err = Expression::parse_condition("contains(/n, /status)")
        .unwrap()
        .matches(&event(data))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`contains()` takes strings, but the value at `/n` is a number"
    );
}

#[test]
fn substrings() {
    assert_eq!(
        eval("substringAfter(\"file.txt\", \".\")", json!({})).unwrap(),
        json!("txt")
    );
    assert_eq!(
        eval(
            "substringAfter(/path, \"/\")",
            json!({"path": "/app/src/main.py"})
        )
        .unwrap(),
        json!("app/src/main.py")
    );
    assert_eq!(
        eval("substringAfter(\"no-match\", \"xyz\")", json!({})).unwrap(),
        json!("no-match")
    );
    assert_eq!(
        eval("substringBefore(\"key=a=b\", \"=\")", json!({})).unwrap(),
        json!("key")
    );
    assert_eq!(
        eval("substringAfterLast(\"/app/src/main.py\", \"/\")", json!({})).unwrap(),
        json!("main.py")
    );
    assert_eq!(
        eval("substringBeforeLast(\"app.src.main\", \".\")", json!({})).unwrap(),
        json!("app.src")
    );
    assert_eq!(
        eval(
            "substringBeforeLast(/f, \"/\")",
            json!({"f": "/app/src/main.py"})
        )
        .unwrap(),
        json!("/app/src")
    );
    assert_eq!(
        eval("substringAfter(/missing, \"-\")", json!({})).unwrap(),
        json!(null)
    );
    assert_eq!(
        eval("substringAfter(\"a-b\", /missing)", json!({})).unwrap(),
        json!("a-b")
    );
    assert_eq!(
        eval("substringAfter(\"a-b\", \"\")", json!({})).unwrap(),
        json!("a-b")
    );
    // Functions compose.
    assert_eq!(
        eval("length(substringAfter(/p, \"-\"))", json!({"p": "ab-cde"})).unwrap(),
        json!(3)
    );
    assert_eq!(
        eval(
            "substringBefore(substringAfter(/p, \"=\"), \";\")",
            json!({"p": "k=v;w"})
        )
        .unwrap(),
        json!("v")
    );
}

#[test]
fn cidr_contains() {
    let v4 = json!({"sourceIp": "192.0.2.3"});
    assert!(check(
        "cidrContains(/sourceIp,\"192.0.2.0/24\")",
        v4.clone()
    ));
    assert!(check(
        "cidrContains(/sourceIp,\"192.0.2.0/24\",\"192.1.1.0/24\")",
        v4.clone()
    ));
    assert!(!check(
        "cidrContains(/sourceIp,\"192.0.2.0/24\",\"192.1.1.0/24\")",
        json!({"sourceIp": "192.2.2.3"})
    ));
    assert!(check(
        "cidrContains(/sourceIp,\"2001:0db8::/32\")",
        json!({"sourceIp": "2001:0db8:aaaa:bbbb::"})
    ));
    assert!(!check(
        "cidrContains(/sourceIp,\"2001:0db8::/32\",\"2001:aaaa::/32\")",
        json!({"sourceIp": "2001:abcd:aaaa:bbbb::"})
    ));
    assert!(check(
        "cidrContains(/ip, \"10.0.0.0/8\", \"0.0.0.0/0\")",
        json!({"ip": "8.8.8.8"})
    ));
    assert!(!check("cidrContains(/sourceIp,\"10.0.0.0/8\")", json!({})));
    assert!(
        !check("cidrContains(/sourceIp,\"::/0\")", v4.clone()),
        "an IPv4 address is not in an IPv6 block"
    );
    // A block with host bits is one address, as Data Prepper's IP library reads it.
    assert!(!check(
        "cidrContains(/sourceIp,\"192.0.2.1/24\")",
        v4.clone()
    ));
    assert!(check("cidrContains(/sourceIp,\"192.0.2.3\")", v4));
    let err = Expression::parse("cidrContains(/ip,\"999.0.0.0/8\")").unwrap_err();
    assert_eq!(err.column, 18, "{err}");
    assert_eq!(parse_err("cidrContains(/sourceIp,123)").column, 24);
    assert_eq!(parse_err("cidrContains(/sourceIp)").column, 1);
    assert_eq!(
        parse_err("cidrContains(\"/ip\", \"10.0.0.0/8\")").column,
        14
    );
    assert!(
        Expression::parse("cidrContains(/ip, \"10.0.0.0/8\")")
            .unwrap()
            .matches(&event(json!({"ip": "nope"})))
            .is_err()
    );
}

#[test]
fn join_and_sub_list() {
    let data = json!({"list": ["string", 1, true]});
    assert_eq!(
        eval("join(/list)", data.clone()).unwrap(),
        json!("string,1,true")
    );
    assert_eq!(
        eval("join(\" \", /list)", data.clone()).unwrap(),
        json!("string 1 true")
    );
    assert_eq!(
        eval("join(\"\\\\, \", /list)", data.clone()).unwrap(),
        json!("string, 1, true")
    );
    assert_eq!(
        eval("join(/l)", json!({"l": [1.0, 1e20, [1, 2], {"a": 1}]})).unwrap(),
        json!("1.0,1.0E20,[1, 2],{a=1}")
    );
    assert_eq!(
        eval(
            "join(/list)",
            json!({"list": {"key1": ["string", 1, true], "key2": [1, 2, 3], "key3": "value3"}})
        )
        .unwrap(),
        json!({"key1": "string,1,true", "key2": "1,2,3", "key3": "value3"})
    );
    assert!(eval("join(/missing)", json!({})).is_err());
    assert!(eval("join(/l)", json!({"l": [1, null]})).is_err());
    parse_err("join(/list, \" \", \"third_arg\")");
    parse_err("join()");
    assert_eq!(parse_err("join(\",\", \"x\")").column, 11);

    let data = json!({"my_list": [0, 1, 2, 3, 4, 5, 6]});
    assert_eq!(
        eval("subList(/my_list, 1, 4)", data.clone()).unwrap(),
        json!([1, 2, 3])
    );
    assert_eq!(
        eval("subList(/my_list, 0, 3)", data.clone()).unwrap(),
        json!([0, 1, 2])
    );
    assert_eq!(
        eval("subList(/my_list, 4, -1)", data.clone()).unwrap(),
        json!([4, 5, 6])
    );
    assert!(eval("subList(/my_list, 5, 9)", data.clone()).is_err());
    assert_eq!(parse_err("subList(/my_list, 1.5, 2)").column, 19);
}

#[test]
fn generated_values() {
    let uuid = eval("generateUuid()", json!({})).unwrap();
    let uuid = uuid.as_str().unwrap();
    assert_eq!(uuid.len(), 36);
    assert_eq!(&uuid[14..15], "4", "a version 4 UUID: {uuid}");
    assert_ne!(
        eval("generateUuid()", json!({})).unwrap(),
        eval("generateUuid()", json!({})).unwrap()
    );
    assert!(eval("now()", json!({})).unwrap().as_i64().unwrap() > 1_700_000_000_000);
    assert_eq!(
        eval("toJsonString()", json!({"a": [1, "x"]})).unwrap(),
        json!(r#"{"a":[1,"x"]}"#)
    );
}

#[test]
fn function_arguments_are_checked_when_parsed() {
    let cases = [
        (
            "length(5)",
            8,
            "`length()` takes a key or a string here, not a number",
        ),
        (
            "length(/a, /b)",
            1,
            "`length()` takes one argument, a key or a string, not 2 arguments",
        ),
        (
            "hasTags(/x)",
            9,
            "`hasTags()` takes a tag (a string) here, not a key (`/x`): it would get the key, not its value",
        ),
        (
            "hasTags(10)",
            9,
            "`hasTags()` takes a tag (a string) here, not a number",
        ),
        (
            "hasTags()",
            1,
            "`hasTags()` takes one or more tags, not none",
        ),
        ("hasTags(\"\")", 9, "`hasTags()` takes non-empty tags"),
        (
            "getMetadata(10)",
            13,
            "`getMetadata()` takes a string here, not a number",
        ),
        (
            "contains(\"a\")",
            1,
            "`contains()` takes two arguments, each a key or a string, not 1 argument",
        ),
        (
            "contains(1234, /strField)",
            10,
            "`contains()` takes a key or a string here, not a number",
        ),
        (
            "substringAfter()",
            1,
            "`substringAfter()` takes two arguments: the string (or its key) and the delimiter, not none",
        ),
        (
            "getEventType(1)",
            1,
            "`getEventType()` takes no arguments, not 1 argument",
        ),
        ("nope(/a)", 1, "unknown function `nope`"),
        ("/a == lenght(/b)", 7, "unknown function `lenght`"),
        (
            "formatDateTime(/t, \"yyyy\")",
            1,
            "`formatDateTime()` (Java date patterns) is not supported",
        ),
    ];
    for (text, column, message) in cases {
        let err = parse_err(text);
        assert_eq!(
            (err.column, err.message.as_str()),
            (column, message),
            "{text}"
        );
    }
}

// ---- static checks and columns ----

#[test]
fn literal_type_errors_are_refused_when_parsed() {
    let cases = [
        (
            "\"a\" < 3",
            1,
            "`<` takes numbers, not a string on its left",
        ),
        (
            "/a < \"3\"",
            6,
            "`<` takes numbers, not a string on its right",
        ),
        (
            "true + 1",
            1,
            "`+` takes numbers or strings, not a boolean on its left",
        ),
        (
            "1 + \"a\"",
            3,
            "`+` adds two numbers or joins two strings, not a number and a string",
        ),
        ("not 5", 5, "`not` takes a boolean, not a number"),
        ("not null", 5, "`not` takes a boolean, not null"),
        ("-\"a\"", 2, "`-` takes a number, not a string"),
        (
            "/a >= 200 and 3",
            15,
            "`and` takes booleans, not a number on its right",
        ),
        (
            "/a * true",
            6,
            "`*` takes numbers, not a boolean on its right",
        ),
        (
            "1 < 2 < 3",
            3,
            "`<` takes numbers, not a boolean on its left",
        ),
        ("5 % 2.0", 5, "`%` takes integers, not a float"),
        (
            "not length(/a)",
            5,
            "`not` takes a boolean, not a number or null",
        ),
    ];
    for (text, column, message) in cases {
        let err = parse_err(text);
        assert_eq!(
            (err.column, err.message.as_str()),
            (column, message),
            "{text}"
        );
    }
    // Anything with a key is checked per event.
    for text in [
        "/a < /b",
        "/a + 1",
        "not /a",
        "/a + /b < 3",
        "getMetadata(\"k\") + 1",
    ] {
        Expression::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

#[test]
fn conditions_must_be_able_to_be_boolean() {
    let err = Expression::parse_condition("/a + 1").unwrap_err();
    assert_eq!(err.column, 4);
    assert_eq!(
        err.message,
        "a condition must be true or false, but this expression gives a number"
    );
    assert_eq!(Expression::parse_condition("\"x\"").unwrap_err().column, 1);
    assert_eq!(
        Expression::parse_condition("length(/a)")
            .unwrap_err()
            .column,
        1
    );
    for text in [
        "/flag",
        "getMetadata(\"k\")",
        "/a == 1",
        "hasTags(\"x\")",
        "(/a)",
    ] {
        Expression::parse_condition(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    // Parsing as a value accepts both.
    Expression::parse("/a + 1").unwrap();
    // A condition that gives something else per event is an error, as in Data Prepper.
    let flag = Expression::parse_condition("/flag").unwrap();
    assert_eq!(
        flag.matches(&event(json!({}))).unwrap_err().to_string(),
        "a condition must be true or false, but the expression gave null"
    );
    assert!(matches!(
        flag.matches(&event(json!({"flag": "yes"}))),
        Err(EvalError::NotBoolean { found: "a string" })
    ));
}

#[test]
fn syntax_errors_point_at_the_column() {
    let cases = [
        ("/a == ", 7, "expected a value at the end of the expression"),
        ("", 1, "expected a value at the end of the expression"),
        ("/a == = 1", 7, "`=` is not an operator; compare with `==`"),
        ("/a = 1", 4, "`=` is not an operator; compare with `==`"),
        ("(/a == 1", 9, "expected `)`, found the end"),
        ("/a == 1)", 8, "this `)` closes no `(`"),
        ("/a ^ 1", 4, "unexpected character `^`"),
        (
            "falkse and true",
            1,
            "`falkse` is not a value: keys start with `/`, strings are quoted, functions are called (`falkse(...)`)",
        ),
        ("/a /b", 4, "expected an operator, found the key `/b`"),
        (
            "${x} == 1",
            1,
            "`${x}` is reserved by Data Prepper and not usable in an expression",
        ),
        ("not -1", 5, "expected a value, found `-`"),
        ("10/2", 3, "expected an operator, found the key `/2`"),
    ];
    for (text, column, message) in cases {
        let err = parse_err(text);
        assert_eq!(
            (err.column, err.message.as_str()),
            (column, message),
            "{text}"
        );
        assert_eq!(err.to_string(), format!("at column {column}: {message}"));
    }
    // Columns count characters, not bytes.
    assert_eq!(parse_err("\"é\" == 1 +").column, 11);
}

#[test]
fn data_preppers_invalid_syntax_is_refused() {
    // GenericExpressionEvaluator_ConditionalIT.invalidExpressionSyntaxArguments and ParserTest.
    for text in [
        "-false",
        "not/status_code",
        "trueand/status_code",
        "trueor/status_code",
        "length(\"abc) == 3",
        "hasTags(t1)",
        "hasTags(\"t1)",
        "hasTags(\"t1\",t2\")",
        "hasTags(,\"t2\")",
        "hasTags(\"t2\",)",
        "contains(\"t2\",)",
        "contains(\"t2\"",
        "contains\"t2\"",
        "contains",
        "contains(str, /strField)",
        "/color in {\"blue, \"yellow\", \"green\"}",
        "/color in {\"blue\", yellow\", \"green\"}",
        "/color in {, \"yellow\", \"green\"}",
        "/color in {blue, \"yellow\", \"green\"}",
        "/value in {22a2.0, 100}",
        "/value in {222, 10a0}",
        "getEventType() == \"test_event",
        "getEventType() == test_event\"",
        "{true or false}",
        "{(5)}",
        "{5 == 5}",
        "{/node =~ \"[A-Z]*\"}",
        "1 in 1",
        "0.",
        "00.",
        ".00",
        ".10",
        "5==",
        "==",
        "not",
        "/status in{200}",
        "/status in({200})",
        "/a in{200, 202}",
        "/a not in{400}",
        "/b<300and/b>200",
        "true an true",
        "2 is in {2}",
        "/status - ",
        " * /status ",
        "not /a in {1} +",
        "/a typeof integer + 1",
    ] {
        assert!(Expression::parse(text).is_err(), "{text} parsed");
    }
    // ParserTest's valid ones.
    for text in [
        "/status in {200}",
        "/a==(/b==200)",
        "/a not in {400}",
        "/a<300 and /b>200",
        "/status>=300",
        r#"/msg =~ "^\\w*\$""#,
        "/a in {200,202}",
        "/a in {200 , 202}",
        "not false",
        "not not false",
        "not (true)",
        "-5",
        "-3.14",
        "-(5)",
        "\"\"\"x\"\"\"",
        "{1, 2} == /p",
    ] {
        Expression::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

// ---- hostile input ----

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for (open, close) in [("(", ")"), ("not ", ""), ("-", ""), ("length(", ")")] {
        let text = format!("{}/a{}", open.repeat(100_000), close.repeat(100_000));
        let err = parse_err(&text);
        assert!(
            err.message.contains("nests deeper than 128 levels"),
            "{open}: {err}"
        );
        assert_eq!(err.column, 128 * open.chars().count() + 1, "{open}");
    }
    // Up to the limit is fine, and evaluates.
    let text = format!("{}/a{} == 1", "(".repeat(128), ")".repeat(128));
    assert!(check(&text, json!({"a": 1})));
    let text = format!("{}true", "not ".repeat(128));
    assert!(check(&text, json!({})));
}

#[test]
fn long_chains_are_loops_not_deep_trees() {
    let text = vec!["/a == 1"; 50_000].join(" or ");
    assert!(check(&format!("{text} or /a == 2"), json!({"a": 2})));
    let sum = vec!["1"; 100_000].join(" + ");
    assert_eq!(eval(&sum, json!({})).unwrap(), json!(100_000));
}

#[test]
fn a_megabyte_string_goes_through_functions_and_regexes() {
    let big = "x".repeat(1 << 20);
    let data = json!({"s": format!("{big}-tail"), "t": big.clone()});
    assert_eq!(
        eval("length(/s)", data.clone()).unwrap(),
        json!((1 << 20) + 5)
    );
    assert!(check("contains(/s, \"-tail\")", data.clone()));
    assert!(check("startsWith(/s, \"xxx\")", data.clone()));
    assert_eq!(
        eval("substringAfter(/s, \"-\")", data.clone()).unwrap(),
        json!("tail")
    );
    assert_eq!(
        eval("length(substringBefore(/s, \"-\"))", data.clone()).unwrap(),
        json!(1 << 20)
    );
    assert!(check("/s =~ \"x*-tail\"", data.clone()));
    assert!(
        !check("/s =~ \"(x+x+)+y\"", data.clone()),
        "no catastrophic backtracking"
    );
    assert!(check("/s == /t + \"-tail\"", data.clone()));
    assert_eq!(
        eval("length(/t + /t)", data.clone()).unwrap(),
        json!(2 << 20)
    );
    // A megabyte expression is parsed too.
    let text = format!("/t == \"{big}\"");
    assert!(check(&text, data));
}

#[test]
fn expressions_are_shareable() {
    fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_send_sync::<Expression>();
    let expression = Expression::parse("/a == 1").unwrap();
    assert_eq!(expression.source(), "/a == 1");
    assert_eq!(format!("{expression:?}"), "Expression(\"/a == 1\")");
}

#[test]
fn the_deepest_expression_allowed_fits_in_a_megabyte_of_stack() {
    // Debug builds give every temporary its own stack slot; this fails if the recursive
    // functions' frames grow (a tokio worker has 2 MiB).
    let worker = std::thread::Builder::new().stack_size(1 << 20).spawn(|| {
        // Each opening, its innermost operand, and how many levels it nests.
        for (open, inner, close, levels) in [
            ("(", "/a", ")", 1),
            ("not ", "/a", "", 1),
            ("-", "/a", "", 1),
            ("substringAfter(", "/a", ", \"-\")", 1),
            ("substringAfter((", "/a", "), \"-\")", 2),
            ("getMetadata(substringAfter((", "\"a\"", "), \"-\"))", 3),
            ("-(-(", "/a", ") + 1)", 4),
            ("(/a == ", "/a", ")", 1),
            ("(not (", "/a", "))", 3),
        ] {
            let depth = parser::MAX_NESTING / levels;
            let text = format!("{}{inner}{}", open.repeat(depth), close.repeat(depth));
            let deeper = format!(
                "{}{inner}{}",
                open.repeat(depth + 1),
                close.repeat(depth + 1)
            );
            assert!(
                Expression::parse(&deeper).is_err(),
                "{open}: not the deepest"
            );
            let expression = Expression::parse(&text).unwrap_or_else(|e| panic!("{open}: {e}"));
            let _ = expression.evaluate(&event(json!({"a": "x"})));
        }
    });
    worker.unwrap().join().unwrap();
}

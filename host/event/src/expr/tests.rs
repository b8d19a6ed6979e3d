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

#[test]
fn smoke() {
    assert!(check("/status_code == 200", json!({"status_code": 200})));
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
    assert!(matches!(
        eval("/a + 1", json!({"a": u64::MAX})),
        Err(EvalError::NumberOutOfRange { .. })
    ));
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

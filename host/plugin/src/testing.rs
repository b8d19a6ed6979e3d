//! A hand-written component for tests that need no wasm toolchain: it implements the world in
//! WAT and misbehaves on request. The first byte of each record's payload picks what it does:
//!
//! | byte | behaviour |
//! |---|---|
//! | `L` | loops forever (hits the deadline) |
//! | `G` | grows memory until the cap (hits the memory limit) |
//! | `T` | executes `unreachable` (a panic) |
//! | `M` | reports the record malformed with reason `bad record` |
//! | `W` | replies with one outcome too many |
//! | other | one event, `{"wat":true}` |
//!
//! With `configurable`, it also exports `configure`, which refuses any option named `bad`.

/// The component's WAT text.
pub fn hostile_component(configurable: bool) -> String {
    let configure_core = if configurable {
        r#"
    ;; configure(options: list<option-entry>) -> result<_, string>
    ;; Lowered: (ptr, len) -> ptr to (discriminant u8, string at 4)
    (func (export "configure") (param $ptr i32) (param $len i32) (result i32)
      (local $i i32) (local $e i32)
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
          (local.set $e (i32.add (local.get $ptr) (i32.mul (local.get $i) (i32.const 16))))
          ;; key is (ptr, len) at offset 0; refuse a 3-byte key starting with "bad"
          (if (i32.and
                (i32.eq (i32.load offset=4 (local.get $e)) (i32.const 3))
                (i32.eq (i32.load8_u (i32.load (local.get $e))) (i32.const 98)))
            (then
              (i32.store8 (i32.const 192) (i32.const 1))
              (i32.store offset=4 (i32.const 192) (i32.const 112))
              (i32.store offset=8 (i32.const 192) (i32.const 16))
              (return (i32.const 192))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      (i32.store8 (i32.const 192) (i32.const 0))
      (i32.const 192))"#
    } else {
        ""
    };
    let core = format!(
        r#"(core module $m
    (memory (export "memory") 1)
    (global $heap (mut i32) (i32.const 4096))
    (data (i32.const 64) "{{\"wat\":true}}")
    (data (i32.const 96) "bad record")
    (data (i32.const 112) "bad option `bad`")
    ;; the list<string> of one event: (ptr 64, len 12)
    (data (i32.const 128) "\40\00\00\00\0c\00\00\00")

    (func $alloc (export "cabi_realloc") (param i32 i32) (param $align i32) (param $size i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get $align))))
      (global.set $heap (i32.add (local.get $p) (local.get $size)))
      (block $ok
        (loop $more
          (br_if $ok (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
          (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))
          (br $more)))
      (local.get $p))

    ;; deserialize-batch(batch: list<raw-record>) -> list<outcome>
    ;; raw-record: 40 bytes (payload ptr/len at 0/4); outcome: 12 bytes (tag u8, ptr/len at 4/8)
    (func (export "deserialize-batch") (param $ptr i32) (param $len i32) (result i32)
      (local $i i32) (local $rec i32) (local $out i32) (local $o i32) (local $byte i32) (local $n i32)
      (local.set $n (local.get $len))
      (local.set $out (call $alloc (i32.const 0) (i32.const 0) (i32.const 4) (i32.mul (i32.add (local.get $len) (i32.const 1)) (i32.const 12))))
      (block $done
        (loop $next
          (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
          (local.set $rec (i32.add (local.get $ptr) (i32.mul (local.get $i) (i32.const 40))))
          (local.set $o (i32.add (local.get $out) (i32.mul (local.get $i) (i32.const 12))))
          (local.set $byte (i32.const 0))
          (if (i32.gt_u (i32.load offset=4 (local.get $rec)) (i32.const 0))
            (then (local.set $byte (i32.load8_u (i32.load (local.get $rec))))))
          (if (i32.eq (local.get $byte) (i32.const 76)) (then (loop $forever (br $forever))))
          (if (i32.eq (local.get $byte) (i32.const 71))
            (then (loop $grow (drop (memory.grow (i32.const 16))) (br $grow))))
          (if (i32.eq (local.get $byte) (i32.const 84)) (then unreachable))
          (if (i32.eq (local.get $byte) (i32.const 87)) (then (local.set $n (i32.add (local.get $len) (i32.const 1)))))
          (if (i32.eq (local.get $byte) (i32.const 77))
            (then
              (i32.store8 (local.get $o) (i32.const 1))
              (i32.store offset=4 (local.get $o) (i32.const 96))
              (i32.store offset=8 (local.get $o) (i32.const 10)))
            (else
              (i32.store8 (local.get $o) (i32.const 0))
              (i32.store offset=4 (local.get $o) (i32.const 128))
              (i32.store offset=8 (local.get $o) (i32.const 1))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $next)))
      ;; the spare outcome a `W` reply includes
      (local.set $o (i32.add (local.get $out) (i32.mul (local.get $len) (i32.const 12))))
      (i32.store8 (local.get $o) (i32.const 0))
      (i32.store offset=4 (local.get $o) (i32.const 128))
      (i32.store offset=8 (local.get $o) (i32.const 1))
      (i32.store (i32.const 176) (local.get $out))
      (i32.store offset=4 (i32.const 176) (local.get $n))
      (i32.const 176)){configure_core}
  )"#
    );
    let configure_component = if configurable {
        format!(
            r#"
  (component $configure
    {core}
    (core instance $i (instantiate $m))
    (type $option-entry' (record (field "key" string) (field "value" string)))
    (export $option-entry "option-entry" (type $option-entry'))
    (func $configure (param "options" (list $option-entry)) (result (result (error string)))
      (canon lift (core func $i "configure") (memory (core memory $i "memory")) (realloc (core func $i "cabi_realloc")) string-encoding=utf8))
    (export "configure" (func $configure)))
  (instance $c (instantiate $configure))
  (export "sluice:plugin/configure@0.1.0" (instance $c))"#
        )
    } else {
        String::new()
    };
    format!(
        r#"(component
  (component $handler
    {core}
    (core instance $i (instantiate $m))
    (type $raw-record' (record
      (field "payload" (list u8))
      (field "key" (option (list u8)))
      (field "received-at-ms" u64)
      (field "origin" string)))
    (export $raw-record "raw-record" (type $raw-record'))
    (type $outcome' (variant (case "events" (list string)) (case "malformed" string)))
    (export $outcome "outcome" (type $outcome'))
    (func $deserialize (param "batch" (list $raw-record)) (result (list $outcome))
      (canon lift (core func $i "deserialize-batch") (memory (core memory $i "memory")) (realloc (core func $i "cabi_realloc")) string-encoding=utf8))
    (export "deserialize-batch" (func $deserialize)))
  (instance $h (instantiate $handler))
  (export "sluice:plugin/raw-byte-handler@0.1.0" (instance $h)){configure_component}
)"#
    )
}

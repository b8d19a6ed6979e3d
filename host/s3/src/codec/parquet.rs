//! Data Prepper's `parquet` input codec: each row of a parquet file is one event, a JSON
//! object in the shape Data Prepper's `GenericRecordJsonEncoder` writes.
//!
//! Data Prepper copies the object to a temporary file and reads it with parquet-avro's
//! `AvroParquetReader` (`READ_INT96_AS_FIXED`), so each row is first an Avro record (the file's
//! schema converted by `AvroSchemaConverter`, unless the file carries its Avro schema), then JSON
//! (`ParquetInputCodec.java`, `GenericRecordJsonEncoder.java`, `AvroSchemaConverter.java`). The
//! caller spools the object to a file the same way ([`crate::source`]), and [`read_rows`] reads
//! it here with the parquet crate's record API, one row group at a time, never the whole file.
//!
//! What each value becomes, as Data Prepper writes it:
//! - a group: an object of its fields in schema order; a missing optional value: `null`;
//! - strings and enums: strings; booleans; `INT32` (`INT_8` to `UINT_32`, `DATE`,
//!   `TIME_MILLIS`) and `INT64` (`UINT_64`, `TIME_MICROS`, every `TIMESTAMP`): the raw number
//!   (days, millis, micros since midnight or the epoch), unsigned ones as Java's signed `int`
//!   and `long` read the same bits;
//! - floats and doubles: numbers (a float as Java prints it: `0.1`, not `0.10000000149011612`),
//!   `NaN` and the infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - `DECIMAL`: on `INT32`/`INT64` the unscaled integer (Avro has no decimal on them), on a
//!   fixed-length array `BigDecimal.toString()` (`12.34`, `1E-10`), on a byte array its double;
//! - a byte array that is no string (no annotation, `JSON`, `BSON`): its text as a number when
//!   it reads as one (`"12"` gives `12.0`), else `{"bytes": "<each byte as a Latin-1 char>"}`;
//!   a fixed-length array (`FLOAT16`, `INT96` too) always that object; `UUID` its usual text;
//! - lists: arrays; without an Avro schema in the file, parquet-avro takes a standard list's
//!   repeated group as the element (`add-list-element-records`), so each element is
//!   `{"element": value}`; maps: objects.
//!
//! Where this differs (each rare): an `INT96` keeps milliseconds only (the record API rounds
//! it), so its 12 bytes are rebuilt from them; a map's keys keep the file's order (Java's
//! `HashMap` order in Data Prepper) and are written as text whatever their type (Data Prepper
//! refuses non-string keys); a string column holding invalid UTF-8, an `INTERVAL` column, or a
//! column name Avro refuses fails the object here or there, not always both.

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};

use parquet::basic::{ConvertedType, LogicalType, Type as PhysicalType};
use parquet::data_type::Decimal;
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::reader::RowIter;
use parquet::record::{Field, Row};
use parquet::schema::types::Type;

use super::write_json_string;

/// Why a parquet object could not be read (on).
#[derive(Debug, thiserror::Error)]
pub enum ParquetCodecError {
    #[error("not a parquet file, or a damaged one: {0}")]
    Open(ParquetError),
    #[error("parquet: reading row {row}: {source}")]
    Row { row: u64, source: ParquetError },
    /// The parquet crate panics on some malformed schemas and values; caught here.
    #[error("parquet: reading row {row}: {message}")]
    Panicked { row: u64, message: String },
}

/// The Avro schema parquet-avro writes into a file's metadata (and its old name): with it,
/// parquet-avro reads lists as the schema says, not as list-element records.
const AVRO_SCHEMA_KEYS: [&str; 2] = ["parquet.avro.schema", "avro.schema"];

/// Reads the parquet file `file` row by row (one row group at a time), handing each row as a
/// JSON object text to `each` with its number (from 1); `each` returns false to stop. Returns
/// the rows handed out; an error comes after the rows before it.
pub fn read_rows(
    file: File,
    mut each: impl FnMut(u64, Vec<u8>) -> bool,
) -> Result<u64, ParquetCodecError> {
    let mut row = 0;
    let read = catch_unwind(AssertUnwindSafe(|| {
        let reader = SerializedFileReader::new(file).map_err(ParquetCodecError::Open)?;
        let meta = reader.metadata().file_metadata();
        let schema = meta.schema_descr().root_schema_ptr();
        let avro = meta.key_value_metadata().is_some_and(|kv| {
            kv.iter()
                .any(|k| AVRO_SCHEMA_KEYS.contains(&k.key.as_str()))
        });
        let encoder = Encoder {
            list_element_records: !avro,
        };
        for next in RowIter::from_file_into(Box::new(reader)) {
            let next = next.map_err(|source| ParquetCodecError::Row {
                row: row + 1,
                source,
            })?;
            row += 1;
            let mut json = Vec::with_capacity(256);
            encoder.group(&mut json, &next, &schema);
            if !each(row, json) {
                break;
            }
        }
        Ok(row)
    }));
    read.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the parquet reader failed".to_owned());
        Err(ParquetCodecError::Panicked {
            row: row + 1,
            message,
        })
    })
}

/// Writes rows as Data Prepper's `GenericRecordJsonEncoder` does.
struct Encoder {
    /// No Avro schema in the file: a standard list's elements are records of its repeated
    /// group (`{"element": value}`), as parquet-avro reads them by default.
    list_element_records: bool,
}

impl Encoder {
    /// A group (a row, a struct): its fields in order, each with its type in `ty`.
    fn group(&self, out: &mut Vec<u8>, row: &Row, ty: &Type) {
        let fields = if ty.is_group() { ty.get_fields() } else { &[] };
        out.push(b'{');
        for (i, ((name, value), ty)) in row.get_column_iter().zip(fields).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(out, name);
            out.push(b':');
            self.field(out, value, ty);
        }
        out.push(b'}');
    }

    fn field(&self, out: &mut Vec<u8>, field: &Field, ty: &Type) {
        match field {
            Field::Null => out.extend_from_slice(b"null"),
            Field::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Field::Byte(n) => integer(out, i64::from(*n)),
            Field::Short(n) => integer(out, i64::from(*n)),
            Field::Int(n) | Field::Date(n) | Field::TimeMillis(n) => integer(out, i64::from(*n)),
            Field::UByte(n) => integer(out, i64::from(*n)),
            Field::UShort(n) => integer(out, i64::from(*n)),
            // Avro's `int` and `long` are signed: Java reads the same bits.
            Field::UInt(n) => integer(out, i64::from(*n as i32)),
            Field::ULong(n) => integer(out, *n as i64),
            Field::Long(n) | Field::TimeMicros(n) | Field::TimestampMicros(n) => integer(out, *n),
            Field::TimestampMillis(n) if physical(ty) == Some(PhysicalType::INT96) => {
                bytes_object(out, &int96(*n));
            }
            Field::TimestampMillis(n) => integer(out, *n),
            // Java's `Float.toString` is the shortest text that reads back as the float.
            Field::Float(x) => double(out, f64::from(*x), x.to_string().parse().ok()),
            Field::Double(x) => double(out, *x, None),
            Field::Float16(x) => bytes_object(out, &x.to_le_bytes()),
            Field::Decimal(d) => decimal(out, d, ty),
            Field::Str(s) if is_bytes(ty) => bytes(out, s.as_bytes()),
            Field::Str(s) => write_json_string(out, s),
            Field::Bytes(b) => match physical(ty) {
                Some(PhysicalType::FIXED_LEN_BYTE_ARRAY)
                    if matches!(
                        ty.get_basic_info().logical_type_ref(),
                        Some(LogicalType::Uuid)
                    ) =>
                {
                    uuid(out, b.data());
                }
                Some(PhysicalType::FIXED_LEN_BYTE_ARRAY) => bytes_object(out, b.data()),
                _ => bytes(out, b.data()),
            },
            Field::Group(row) => self.group(out, row, ty),
            Field::ListInternal(list) => {
                let (element, record) = self.element(ty);
                out.push(b'[');
                for (i, value) in list.elements().iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    if let Some(name) = record {
                        out.push(b'{');
                        write_json_string(out, name);
                        out.push(b':');
                        self.field(out, value, element);
                        out.push(b'}');
                    } else {
                        self.field(out, value, element);
                    }
                }
                out.push(b']');
            }
            Field::MapInternal(map) => {
                let value_ty = child(ty, 0).and_then(|kv| child(kv, 1)).unwrap_or(ty);
                out.push(b'{');
                for (i, (key, value)) in map.entries().iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    match key {
                        Field::Str(k) => write_json_string(out, k),
                        other => write_json_string(out, &other.to_string()),
                    }
                    out.push(b':');
                    self.field(out, value, value_ty);
                }
                out.push(b'}');
            }
        }
    }

    /// The type of a list's elements as the parquet crate reads them (its backward-compatible
    /// list rules), and the field name to wrap each in when parquet-avro reads the repeated
    /// group itself as the element.
    fn element<'t>(&self, ty: &'t Type) -> (&'t Type, Option<&'t str>) {
        let info = ty.get_basic_info();
        let annotated = ty.is_group()
            && matches!(
                info.converted_type(),
                ConvertedType::LIST | ConvertedType::MAP | ConvertedType::MAP_KEY_VALUE
            );
        let Some(repeated) = child(ty, 0).filter(|_| annotated) else {
            // A bare repeated field: a list of itself.
            return (ty, None);
        };
        if info.converted_type() != ConvertedType::LIST {
            // A map of keys only: a list of its keys.
            return (child(repeated, 0).unwrap_or(repeated), None);
        }
        if is_element_type(repeated) {
            return (repeated, None);
        }
        let element = child(repeated, 0).unwrap_or(repeated);
        let record = self.list_element_records.then(|| element.name());
        (element, record)
    }
}

/// The parquet crate's test for a list's repeated field being the element itself (legacy
/// two-level lists), else its only child is (`record::reader::Reader::is_element_type`).
fn is_element_type(repeated: &Type) -> bool {
    if repeated.is_group() {
        let fields = repeated.get_fields();
        let list = matches!(
            repeated.get_basic_info().logical_type_ref(),
            Some(LogicalType::List)
        ) || repeated.get_basic_info().converted_type() == ConvertedType::LIST;
        let single_repeated = fields.len() == 1
            && fields[0].get_basic_info().has_repetition()
            && fields[0].get_basic_info().repetition() == parquet::basic::Repetition::REPEATED;
        if list || single_repeated {
            return false;
        }
        fields.len() > 1 || repeated.name() == "array" || repeated.name().ends_with("_tuple")
    } else {
        true
    }
}

fn child(ty: &Type, i: usize) -> Option<&Type> {
    if ty.is_group() {
        ty.get_fields().get(i).map(|t| &**t)
    } else {
        None
    }
}

fn physical(ty: &Type) -> Option<PhysicalType> {
    ty.is_primitive().then(|| ty.get_physical_type())
}

/// A `BYTE_ARRAY` parquet-avro reads as Avro `bytes`: only `STRING` and `ENUM` are strings.
fn is_bytes(ty: &Type) -> bool {
    let info = ty.get_basic_info();
    matches!(
        info.logical_type_ref(),
        Some(LogicalType::Json | LogicalType::Bson)
    ) || matches!(
        info.converted_type(),
        ConvertedType::JSON | ConvertedType::BSON
    )
}

fn integer(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(n.to_string().as_bytes());
}

/// A finite number as JSON (`shortest`: the value's shortest text, for a float), the others
/// quoted as Java prints them.
fn double(out: &mut Vec<u8>, x: f64, shortest: Option<f64>) {
    if x.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else {
        // serde_json keeps a `.0` on whole numbers, so a double stays a double downstream.
        let x = shortest.unwrap_or(x);
        let _ = serde_json::to_writer(&mut *out, &x);
    }
}

/// Avro `bytes`: the text, when it reads as a Java `BigDecimal`, as its double; else
/// `{"bytes": ...}`.
fn bytes(out: &mut Vec<u8>, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match java_big_decimal(&text) {
        Some(x) => double(out, x, None),
        None => bytes_object(out, data),
    }
}

/// `{"bytes": "..."}`, each byte a char (Java's ISO-8859-1 decoding).
fn bytes_object(out: &mut Vec<u8>, data: &[u8]) {
    let text: String = data.iter().map(|&b| char::from(b)).collect();
    out.extend_from_slice(b"{\"bytes\":");
    write_json_string(out, &text);
    out.push(b'}');
}

/// The double of `text` if Java's `new BigDecimal(text)` reads it: a sign, digits with at
/// most one `.` (at least one digit), an exponent.
fn java_big_decimal(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut n = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        i += usize::from(matches!(b.get(i), Some(b'+' | b'-')));
        if digits(&mut i) == 0 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    text.parse().ok()
}

fn decimal(out: &mut Vec<u8>, d: &Decimal, ty: &Type) {
    match d {
        // Avro has no decimal on `int` or `long`: the unscaled number.
        Decimal::Int32 { value, .. } => integer(out, i64::from(i32::from_be_bytes(*value))),
        Decimal::Int64 { value, .. } => integer(out, i64::from_be_bytes(*value)),
        Decimal::Bytes { value, scale, .. } => {
            let text = big_decimal(value.data(), *scale);
            if physical(ty) == Some(PhysicalType::FIXED_LEN_BYTE_ARRAY) {
                out.extend_from_slice(text.as_bytes());
            } else {
                // `BigDecimal.doubleValue()`.
                double(out, text.parse().unwrap_or(f64::NAN), None);
            }
        }
    }
}

/// Java's `new BigDecimal(new BigInteger(bytes), scale).toString()`: `bytes` big-endian two's
/// complement.
fn big_decimal(bytes: &[u8], scale: i32) -> String {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    // The magnitude, big-endian.
    let mut magnitude: Vec<u8> = if negative {
        let mut m: Vec<u8> = bytes.iter().map(|b| !b).collect();
        for b in m.iter_mut().rev() {
            let (sum, carry) = b.overflowing_add(1);
            *b = sum;
            if !carry {
                break;
            }
        }
        m
    } else {
        bytes.to_vec()
    };
    let mut digits = Vec::new();
    while magnitude.iter().any(|&b| b != 0) {
        let mut rest = 0u32;
        for b in magnitude.iter_mut() {
            let n = (rest << 8) | u32::from(*b);
            *b = (n / 10) as u8;
            rest = n % 10;
        }
        digits.push(b'0' + rest as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    let coefficient = String::from_utf8(digits).expect("ASCII digits");
    let sign = if negative { "-" } else { "" };
    let len = coefficient.len() as i64;
    let scale = i64::from(scale);
    let adjusted = len - 1 - scale;
    if scale == 0 {
        format!("{sign}{coefficient}")
    } else if scale > 0 && adjusted >= -6 {
        if len > scale {
            let (whole, fraction) = coefficient.split_at((len - scale) as usize);
            format!("{sign}{whole}.{fraction}")
        } else {
            let zeros = "0".repeat((scale - len) as usize);
            format!("{sign}0.{zeros}{coefficient}")
        }
    } else {
        let (first, rest) = coefficient.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let plus = if adjusted > 0 { "+" } else { "" };
        format!("{sign}{first}{point}{rest}E{plus}{adjusted}")
    }
}

/// An `INT96` timestamp's 12 bytes (nanoseconds of the day, then the Julian day, both
/// little-endian) from the milliseconds the record API gives.
fn int96(millis: i64) -> [u8; 12] {
    const DAY: i64 = 86_400_000;
    const JULIAN_DAY_OF_EPOCH: i64 = 2_440_588;
    let day = millis.div_euclid(DAY) + JULIAN_DAY_OF_EPOCH;
    let nanos = millis.rem_euclid(DAY) * 1_000_000;
    let mut b = [0; 12];
    b[..8].copy_from_slice(&(nanos as u64).to_le_bytes());
    b[8..].copy_from_slice(&(day as u32).to_le_bytes());
    b
}

/// A `UUID` as Java's `UUID.toString()` writes it (parquet-avro reads it as a string).
fn uuid(out: &mut Vec<u8>, data: &[u8]) {
    if data.len() != 16 {
        return bytes_object(out, data);
    }
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    );
    write_json_string(out, &text);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::data_type::{
        BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
        FloatType, Int32Type, Int64Type, Int96, Int96Type,
    };
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::*;

    /// One column's values with their definition and repetition levels.
    enum Values {
        Bool(Vec<bool>),
        I32(Vec<i32>),
        I64(Vec<i64>),
        I96(Vec<Int96>),
        F32(Vec<f32>),
        F64(Vec<f64>),
        Bytes(Vec<&'static [u8]>),
        Fixed(Vec<Vec<u8>>),
    }

    struct Column {
        values: Values,
        def: Option<Vec<i16>>,
        rep: Option<Vec<i16>>,
    }

    fn col(values: Values) -> Column {
        Column {
            values,
            def: None,
            rep: None,
        }
    }

    fn with_def(values: Values, def: Vec<i16>) -> Column {
        Column {
            values,
            def: Some(def),
            rep: None,
        }
    }

    fn with_levels(values: Values, def: Vec<i16>, rep: Vec<i16>) -> Column {
        Column {
            values,
            def: Some(def),
            rep: Some(rep),
        }
    }

    /// A parquet file of `schema`, one row group per entry of `groups` (its columns in order),
    /// with `metadata` as key-value metadata.
    fn write(
        schema: &str,
        groups: Vec<Vec<Column>>,
        metadata: &[(&str, &str)],
        props: WriterProperties,
    ) -> tempfile::NamedTempFile {
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut writer =
            SerializedFileWriter::new(file.reopen().unwrap(), schema, Arc::new(props)).unwrap();
        for (k, v) in metadata {
            writer.append_key_value_metadata(parquet::file::metadata::KeyValue::new(
                (*k).to_owned(),
                (*v).to_owned(),
            ));
        }
        for columns in groups {
            let mut group = writer.next_row_group().unwrap();
            for c in columns {
                let mut w = group.next_column().unwrap().unwrap();
                let (def, rep) = (c.def.as_deref(), c.rep.as_deref());
                match c.values {
                    Values::Bool(v) => w.typed::<BoolType>().write_batch(&v, def, rep),
                    Values::I32(v) => w.typed::<Int32Type>().write_batch(&v, def, rep),
                    Values::I64(v) => w.typed::<Int64Type>().write_batch(&v, def, rep),
                    Values::I96(v) => w.typed::<Int96Type>().write_batch(&v, def, rep),
                    Values::F32(v) => w.typed::<FloatType>().write_batch(&v, def, rep),
                    Values::F64(v) => w.typed::<DoubleType>().write_batch(&v, def, rep),
                    Values::Bytes(v) => {
                        let v: Vec<ByteArray> = v.into_iter().map(ByteArray::from).collect();
                        w.typed::<ByteArrayType>().write_batch(&v, def, rep)
                    }
                    Values::Fixed(v) => {
                        let v: Vec<FixedLenByteArray> = v
                            .into_iter()
                            .map(|b| FixedLenByteArray::from(ByteArray::from(b)))
                            .collect();
                        w.typed::<FixedLenByteArrayType>().write_batch(&v, def, rep)
                    }
                }
                .unwrap();
                w.close().unwrap();
            }
            group.close().unwrap();
        }
        writer.close().unwrap();
        file
    }

    fn rows_of(file: &tempfile::NamedTempFile) -> Result<Vec<String>, ParquetCodecError> {
        let mut rows = Vec::new();
        read_rows(file.reopen().unwrap(), |n, json| {
            assert_eq!(n as usize, rows.len() + 1, "numbered from 1");
            rows.push(String::from_utf8(json).unwrap());
            true
        })?;
        Ok(rows)
    }

    /// Each row must be valid JSON, equal to `want`.
    fn check(rows: &[String], want: &[&str]) {
        for row in rows {
            serde_json::from_str::<serde_json::Value>(row)
                .unwrap_or_else(|e| panic!("{row} is no JSON: {e}"));
        }
        assert_eq!(rows, want);
    }

    #[test]
    fn each_type_is_written_as_data_preppers_encoder_writes_it() {
        let file = write(
            "message m {
               required boolean b;
               required int32 i8 (INT_8);
               required int32 i;
               required int32 u32 (UINT_32);
               required int64 l;
               required int64 u64 (UINT_64);
               required float f;
               required double d;
               required binary s (UTF8);
               required binary e (ENUM);
               required binary raw;
               required binary number;
               required binary j (JSON);
               required int32 date (DATE);
               required int32 tm (TIME_MILLIS);
               required int64 ts (TIMESTAMP_MILLIS);
               required int64 tsu (TIMESTAMP_MICROS);
               required int96 t96;
               required int32 d32 (DECIMAL(5,2));
               required int64 d64 (DECIMAL(12,3));
               required fixed_len_byte_array(4) dfix (DECIMAL(9,2));
               required binary dbin (DECIMAL(9,2));
               required fixed_len_byte_array(3) fix;
               required fixed_len_byte_array(16) id (UUID);
             }",
            vec![vec![
                col(Values::Bool(vec![true])),
                col(Values::I32(vec![-5])),
                col(Values::I32(vec![42])),
                col(Values::I32(vec![-1])),
                col(Values::I64(vec![1 << 40])),
                col(Values::I64(vec![-2])),
                col(Values::F32(vec![0.1])),
                col(Values::F64(vec![1.0])),
                col(Values::Bytes(vec!["a\"b\\c\né😀".as_bytes()])),
                col(Values::Bytes(vec![b"RED"])),
                col(Values::Bytes(vec![b"\x00\xffab"])),
                col(Values::Bytes(vec![b"-1.5e2"])),
                col(Values::Bytes(vec![b"{\"a\":1}"])),
                col(Values::I32(vec![19_000])),
                col(Values::I32(vec![3_600_000])),
                col(Values::I64(vec![1_700_000_000_123])),
                col(Values::I64(vec![1_700_000_000_123_456])),
                col(Values::I96(vec![Int96::from(vec![
                    0x0ABC_DE00,
                    0x0000_0001,
                    2_460_000,
                ])])),
                col(Values::I32(vec![1234])),
                col(Values::I64(vec![-1_234_567])),
                col(Values::Fixed(vec![(-12_345i32).to_be_bytes().to_vec()])),
                col(Values::Bytes(vec![&[0x30, 0x39]])),
                col(Values::Fixed(vec![vec![b'x', 0x01, 0xe9]])),
                col(Values::Fixed(vec![(0u8..16).collect()])),
            ]],
            &[],
            WriterProperties::default(),
        );
        let rows = rows_of(&file).unwrap();
        // The INT96 loses its sub-millisecond nanoseconds (0x1_0ABC_DE00 ns is 4475.05 ms).
        let t96: String = int96((2_460_000 - 2_440_588) * 86_400_000 + 4475)
            .iter()
            .map(|&b| char::from(b))
            .collect();
        let t96 = serde_json::to_string(&t96).unwrap();
        let want = format!(
            r#"{{"b":true,"i8":-5,"i":42,"u32":-1,"l":1099511627776,"u64":-2,"f":0.1,"d":1.0,"s":"a\"b\\c\né😀","e":"RED","raw":{{"bytes":"\u0000ÿab"}},"number":-150.0,"j":{{"bytes":"{{\"a\":1}}"}},"date":19000,"tm":3600000,"ts":1700000000123,"tsu":1700000000123456,"t96":{{"bytes":{t96}}},"d32":1234,"d64":-1234567,"dfix":-123.45,"dbin":123.45,"fix":{{"bytes":"x\u0001é"}},"id":"00010203-0405-0607-0809-0a0b0c0d0e0f"}}"#
        );
        check(&rows, &[&want]);
    }

    #[test]
    fn floats_keep_their_shortest_text_and_odd_values_are_quoted() {
        let file = write(
            "message m { required float f; required double d; }",
            vec![vec![
                col(Values::F32(vec![1.0, f32::NAN, 1e10, -0.25])),
                col(Values::F64(vec![
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    0.1,
                    3.0,
                ])),
            ]],
            &[],
            WriterProperties::default(),
        );
        check(
            &rows_of(&file).unwrap(),
            &[
                r#"{"f":1.0,"d":"Infinity"}"#,
                r#"{"f":"NaN","d":"-Infinity"}"#,
                r#"{"f":10000000000.0,"d":0.1}"#,
                r#"{"f":-0.25,"d":3.0}"#,
            ],
        );
    }

    #[test]
    fn big_decimals_print_as_java_does() {
        assert_eq!(big_decimal(&[0x30, 0x39], 2), "123.45");
        assert_eq!(big_decimal(&[0x30, 0x39], 0), "12345");
        assert_eq!(big_decimal(&[0x01], 10), "1E-10");
        assert_eq!(big_decimal(&[0x01], 7), "1E-7");
        assert_eq!(big_decimal(&[0x01], 6), "0.000001");
        assert_eq!(big_decimal(&[0x00], 2), "0.00");
        assert_eq!(big_decimal(&[0xff], 1), "-0.1");
        assert_eq!(big_decimal(&[0x30, 0x39], -2), "1.2345E+6");
        assert_eq!(
            big_decimal(&(-1i128 << 100).to_be_bytes(), 0),
            (-1i128 << 100).to_string()
        );
    }

    #[test]
    fn bytes_read_as_a_number_only_when_java_would() {
        for (text, want) in [
            ("12", Some(12.0)),
            ("+.5", Some(0.5)),
            ("5.", Some(5.0)),
            ("1E+3", Some(1000.0)),
            ("", None),
            (".", None),
            ("1e", None),
            (" 1", None),
            ("inf", None),
            ("NaN", None),
            ("0x10", None),
        ] {
            assert_eq!(java_big_decimal(text), want, "{text:?}");
        }
    }

    #[test]
    fn nulls_nested_groups_lists_and_maps() {
        let file = write(
            "message m {
               optional binary name (UTF8);
               optional group address {
                 required binary city (UTF8);
                 optional int32 zip;
               }
               optional group tags (LIST) {
                 repeated group list {
                   optional binary element (UTF8);
                 }
               }
               optional group attrs (MAP) {
                 repeated group key_value {
                   required binary key (UTF8);
                   optional int64 value;
                 }
               }
               repeated int32 legacy;
             }",
            vec![vec![
                with_def(Values::Bytes(vec![b"ann"]), vec![1, 0]),
                // Row 1: {city: x, zip: 1}; row 2: no address.
                with_def(Values::Bytes(vec![b"x"]), vec![1, 0]),
                with_def(Values::I32(vec![1]), vec![2, 0]),
                // Row 1: [a, null]; row 2: no list.
                with_levels(Values::Bytes(vec![b"a"]), vec![3, 2, 0], vec![0, 1, 0]),
                // Row 1: {k: 7, n: null}; row 2: an empty map.
                with_levels(
                    Values::Bytes(vec![b"k", b"n"]),
                    vec![2, 2, 1],
                    vec![0, 1, 0],
                ),
                with_levels(Values::I64(vec![7]), vec![3, 2, 1], vec![0, 1, 0]),
                // Row 1: [4, 5]; row 2: [].
                with_levels(Values::I32(vec![4, 5]), vec![1, 1, 0], vec![0, 1, 0]),
            ]],
            &[],
            WriterProperties::default(),
        );
        let rows = rows_of(&file).unwrap();
        check(
            &rows,
            &[
                r#"{"name":"ann","address":{"city":"x","zip":1},"tags":[{"element":"a"},{"element":null}],"attrs":{"k":7,"n":null},"legacy":[4,5]}"#,
                r#"{"name":null,"address":null,"tags":null,"attrs":{},"legacy":[]}"#,
            ],
        );
        // With the Avro schema parquet-avro writes, lists are plain arrays.
        let file = write(
            "message m { optional group tags (LIST) { repeated group list { optional int32 element; } } }",
            vec![vec![with_levels(
                Values::I32(vec![1, 2]),
                vec![3, 3],
                vec![0, 1],
            )]],
            &[("parquet.avro.schema", "{}")],
            WriterProperties::default(),
        );
        check(&rows_of(&file).unwrap(), &[r#"{"tags":[1,2]}"#]);
    }

    #[test]
    fn rows_of_every_row_group_are_numbered_in_order_and_compressed_pages_read() {
        for codec in [
            parquet::basic::Compression::SNAPPY,
            parquet::basic::Compression::GZIP(Default::default()),
            parquet::basic::Compression::ZSTD(Default::default()),
            parquet::basic::Compression::LZ4_RAW,
        ] {
            let groups = (0..3)
                .map(|g| vec![col(Values::I64((0..100).map(|i| g * 100 + i).collect()))])
                .collect();
            let props = WriterProperties::builder().set_compression(codec).build();
            let file = write("message m { required int64 n; }", groups, &[], props);
            let rows = rows_of(&file).unwrap();
            assert_eq!(rows.len(), 300, "{codec:?}");
            for (i, row) in rows.iter().enumerate() {
                assert_eq!(row, &format!(r#"{{"n":{i}}}"#), "{codec:?}");
            }
        }
    }

    #[test]
    fn a_reader_that_stops_reads_no_further() {
        let file = write(
            "message m { required int32 n; }",
            vec![vec![col(Values::I32((0..10).collect()))]],
            &[],
            WriterProperties::default(),
        );
        let mut seen = 0;
        let read = read_rows(file.reopen().unwrap(), |n, _| {
            seen += 1;
            n < 3
        })
        .unwrap();
        assert_eq!((read, seen), (3, 3));
    }

    #[test]
    fn a_file_that_is_no_parquet_or_cut_short_fails_after_the_rows_before() {
        let not = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(not.path(), b"{\"message\": \"not parquet\"}\n").unwrap();
        let err = rows_of(&not).unwrap_err();
        assert!(matches!(err, ParquetCodecError::Open(_)), "{err}: {err:?}");
        assert!(err.to_string().starts_with("not a parquet file"), "{err}");

        // Two row groups; the second one's pages overwritten: the first's rows come out.
        let groups = (0..2)
            .map(|g| vec![col(Values::I64((0..1000).map(|i| g * 1000 + i).collect()))])
            .collect();
        let props = WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let file = write("message m { required int64 n; }", groups, &[], props);
        let reader = SerializedFileReader::new(file.reopen().unwrap()).unwrap();
        let second = reader.metadata().row_group(1).column(0).byte_range();
        let mut bytes = std::fs::read(file.path()).unwrap();
        for b in &mut bytes[second.0 as usize..(second.0 + second.1) as usize] {
            *b = 0xAB;
        }
        std::fs::write(file.path(), &bytes).unwrap();
        let mut rows = 0;
        let err = read_rows(file.reopen().unwrap(), |_, _| {
            rows += 1;
            true
        })
        .unwrap_err();
        assert_eq!(rows, 1000, "{err}");
        assert!(err.to_string().contains("row 1001"), "{err}");

        // Cut short: the footer is gone.
        let full = std::fs::read(file.path()).unwrap();
        std::fs::write(file.path(), &full[..full.len() / 2]).unwrap();
        let err = rows_of(&file).unwrap_err();
        assert!(matches!(err, ParquetCodecError::Open(_)), "{err}");
    }
}

//! A protobuf reader for the OTLP trace messages, written from the `.proto`
//! files (not shared with the gateway's encoder, so a mistake in one is not
//! hidden by the other). Strict as a real collector's unmarshalling: a known
//! field of the wrong wire type, a truncated field or an id of the wrong
//! length is an error; unknown fields are skipped.

use std::collections::BTreeMap;

use super::{AttrValue, CollectedSpan};

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// One field: its number and value.
enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

fn fields(msg: &[u8]) -> Result<Vec<(u64, Raw<'_>)>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < msg.len() {
        let tag = varint(msg, &mut at)?;
        let (number, wire) = (tag >> 3, tag & 7);
        if number == 0 {
            return Err("field number 0".into());
        }
        let value = match wire {
            VARINT => Raw::Varint(varint(msg, &mut at)?),
            FIXED64 => {
                let b = msg.get(at..at + 8).ok_or("truncated fixed64")?;
                at += 8;
                Raw::Fixed64(u64::from_le_bytes(b.try_into().map_err(|_| "fixed64")?))
            }
            LEN => {
                let len = usize::try_from(varint(msg, &mut at)?).map_err(|_| "length")?;
                let b = msg.get(at..at + len).ok_or("truncated length-delimited field")?;
                at += len;
                Raw::Bytes(b)
            }
            FIXED32 => {
                let b = msg.get(at..at + 4).ok_or("truncated fixed32")?;
                at += 4;
                Raw::Fixed32(u32::from_le_bytes(b.try_into().map_err(|_| "fixed32")?))
            }
            w => return Err(format!("wire type {w}")),
        };
        out.push((number, value));
    }
    Ok(out)
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let byte = *b.get(*at).ok_or("truncated varint")?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long".into())
}

fn bytes<'a>(field: &str, v: &Raw<'a>) -> Result<&'a [u8], String> {
    match v {
        Raw::Bytes(b) => Ok(b),
        _ => Err(format!("{field}: expected a length-delimited field")),
    }
}

fn string(field: &str, v: &Raw<'_>) -> Result<String, String> {
    String::from_utf8(bytes(field, v)?.to_vec()).map_err(|_| format!("{field}: not UTF-8"))
}

fn uint(field: &str, v: &Raw<'_>) -> Result<u64, String> {
    match v {
        Raw::Varint(n) => Ok(*n),
        _ => Err(format!("{field}: expected a varint")),
    }
}

/// An `ExportTraceServiceRequest`'s spans, each with its resource's
/// `service.name`.
pub(super) fn export_request(msg: &[u8]) -> Result<Vec<CollectedSpan>, String> {
    let mut spans = Vec::new();
    for (n, v) in fields(msg)? {
        if n == 1 {
            resource_spans(bytes("resource_spans", &v)?, &mut spans)?;
        }
    }
    Ok(spans)
}

fn resource_spans(msg: &[u8], out: &mut Vec<CollectedSpan>) -> Result<(), String> {
    let mut resource = BTreeMap::new();
    let mut scopes = Vec::new();
    for (n, v) in fields(msg)? {
        match n {
            1 => {
                for (n, v) in fields(bytes("resource", &v)?)? {
                    if n == 1 {
                        let (k, val) = key_value(bytes("resource.attributes", &v)?)?;
                        resource.insert(k, val);
                    }
                }
            }
            2 => scopes.push(bytes("scope_spans", &v)?),
            3 => drop(string("schema_url", &v)?),
            _ => {}
        }
    }
    for scope in scopes {
        let mut scope_name = String::new();
        let mut spans = Vec::new();
        for (n, v) in fields(scope)? {
            match n {
                1 => {
                    for (n, v) in fields(bytes("scope", &v)?)? {
                        if n == 1 {
                            scope_name = string("scope.name", &v)?;
                        }
                    }
                }
                2 => spans.push(span(bytes("spans", &v)?)?),
                _ => {}
            }
        }
        for mut s in spans {
            s.resource = resource.clone();
            s.scope = scope_name.clone();
            out.push(s);
        }
    }
    Ok(())
}

fn span(msg: &[u8]) -> Result<CollectedSpan, String> {
    let mut s = CollectedSpan::default();
    for (n, v) in fields(msg)? {
        match n {
            1 => s.trace_id = hex(bytes("trace_id", &v)?),
            2 => s.span_id = hex(bytes("span_id", &v)?),
            3 => s.trace_state = string("trace_state", &v)?,
            4 => {
                let b = bytes("parent_span_id", &v)?;
                s.parent_span_id = (!b.is_empty()).then(|| hex(b));
            }
            5 => s.name = string("name", &v)?,
            6 => s.kind = uint("kind", &v)? as i32,
            7 => match v {
                Raw::Fixed64(t) => s.start_ns = t,
                _ => return Err("start_time_unix_nano: expected fixed64".into()),
            },
            8 => match v {
                Raw::Fixed64(t) => s.end_ns = t,
                _ => return Err("end_time_unix_nano: expected fixed64".into()),
            },
            9 => {
                let (k, val) = key_value(bytes("attributes", &v)?)?;
                s.attributes.insert(k, val);
            }
            15 => {
                for (n, v) in fields(bytes("status", &v)?)? {
                    match n {
                        2 => s.status_message = string("status.message", &v)?,
                        3 => s.status_code = uint("status.code", &v)? as i32,
                        _ => {}
                    }
                }
            }
            16 => match v {
                Raw::Fixed32(f) => s.flags = f,
                _ => return Err("flags: expected fixed32".into()),
            },
            _ => {}
        }
    }
    Ok(s)
}

fn key_value(msg: &[u8]) -> Result<(String, AttrValue), String> {
    let mut key = None;
    let mut value = None;
    for (n, v) in fields(msg)? {
        match n {
            1 => key = Some(string("key", &v)?),
            2 => value = Some(any_value(bytes("value", &v)?)?),
            _ => {}
        }
    }
    let key = key.filter(|k| !k.is_empty()).ok_or("an attribute without a key")?;
    let value = value.ok_or_else(|| format!("attribute {key}: no value"))?;
    Ok((key, value))
}

fn any_value(msg: &[u8]) -> Result<AttrValue, String> {
    let mut out = None;
    for (n, v) in fields(msg)? {
        out = Some(match n {
            1 => AttrValue::Str(string("string_value", &v)?),
            2 => AttrValue::Bool(uint("bool_value", &v)? != 0),
            3 => AttrValue::Int(uint("int_value", &v)? as i64),
            4 => match v {
                Raw::Fixed64(bits) => AttrValue::Double(f64::from_bits(bits)),
                _ => return Err("double_value: expected fixed64".into()),
            },
            5 => {
                let mut items = Vec::new();
                for (n, v) in fields(bytes("array_value", &v)?)? {
                    if n == 1 {
                        items.push(any_value(bytes("array_value.values", &v)?)?);
                    }
                }
                AttrValue::Array(items)
            }
            _ => continue,
        });
    }
    out.ok_or_else(|| "an AnyValue with no value".into())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

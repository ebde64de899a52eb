//! A configuration file: interpolated, parsed (serde-saphyr) and compiled into a
//! catalog, with a fixed environment. Errors are expected; panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_core::{Catalog, ConfigSource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let env = |k: &str| (k == "KEY").then(|| "sk-fuzz".to_owned());
    let source = ConfigSource::from_text("fuzz.yaml", text);
    if let Ok(raw) = source.parse_with(&env) {
        let _ = Catalog::compile(&raw, "fuzz.yaml", &env);
    }
});

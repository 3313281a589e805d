//! A misspelt section or field anywhere in the app's genesis is an error naming it, never
//! silently the defaults: a network started with `"take_rate_pmm"` would otherwise run with
//! the default take rate and nobody would know.

use gpuchain_genesis::AppGenesis;

fn parse(text: &str) -> Result<AppGenesis, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn a_misspelt_genesis_field_is_an_error() {
    // The defaults round-trip, and a correct partial genesis parses.
    let full = serde_json::to_string(&AppGenesis::default()).unwrap();
    assert_eq!(parse(&full).unwrap(), AppGenesis::default());
    assert!(parse(r#"{"bank": {"balances": []}}"#).is_ok());

    let mut misspelt = serde_json::to_value(AppGenesis::default()).unwrap();
    let take = misspelt["auction"]["params"]
        .as_object_mut()
        .unwrap()
        .remove("take_rate_ppm")
        .unwrap();
    misspelt["auction"]["params"]["take_rate_pmm"] = take;
    let err = parse(&misspelt.to_string()).unwrap_err();
    assert!(err.contains("unknown field `take_rate_pmm`"), "{err}");

    for (text, field) in [
        (r#"{"verfiy": {}}"#, "verfiy"),
        (r#"{"bank": {"balance": []}}"#, "balance"),
        (
            r#"{"staking": {"validators": [], "provider": []}}"#,
            "provider",
        ),
    ] {
        let err = parse(text).unwrap_err();
        assert!(
            err.contains(&format!("unknown field `{field}`")),
            "{text}: {err}"
        );
    }
}

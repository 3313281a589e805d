//! docs/protocol.md's table of default parameters is what the code uses.

use gpuchain_genesis::AppGenesis;

fn documented() -> serde_json::Value {
    let doc = include_str!("../../docs/protocol.md");
    let tag = "```json default-params";
    let start = doc.find(tag).expect("default-params block") + tag.len();
    let end = start + doc[start..].find("```").expect("end of the block");
    serde_json::from_str(&doc[start..end]).expect("the block is JSON")
}

fn defaults() -> serde_json::Value {
    let genesis = serde_json::to_value(AppGenesis::default()).expect("genesis to JSON");
    let mut params = serde_json::Map::new();
    params.insert("tx".into(), genesis["tx"].clone());
    for module in [
        "bank",
        "staking",
        "slashing",
        "reputation",
        "auction",
        "verify",
        "serving",
    ] {
        params.insert(module.into(), genesis[module]["params"].clone());
    }
    serde_json::Value::Object(params)
}

#[test]
fn documented_default_parameters_match_the_code() {
    let code = defaults();
    assert_eq!(
        documented(),
        code,
        "update the default-params block in docs/protocol.md to:\n{}",
        serde_json::to_string_pretty(&code).unwrap_or_default()
    );
}

//! The gateway's command line: what it takes, and bad settings refused before it listens.
//! (Its routing over real providers is tested end to end in tests/, which runs this binary.)

use std::process::Command;

fn gateway(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpuchain-gateway"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_help_names_every_setting() {
    let out = gateway(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--listen",
        "--upstream",
        "--node",
        "--probe-interval-ms",
        "--hedge-after-ms",
        "--max-attempts",
        "--latency-weight",
        "--price-weight",
        "--reputation-weight",
    ] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
}

#[test]
fn bad_upstreams_are_refused_with_the_reason() {
    for (arg, reason) in [
        ("127.0.0.1:8081", "is not an http(s) URL"),
        ("http://127.0.0.1:8081,price=cheap", "is not a whole number"),
        ("http://127.0.0.1:8081,colour=red", "unknown `colour`"),
    ] {
        let out = gateway(&["--upstream", arg]);
        assert!(!out.status.success(), "{arg}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(reason), "{arg}: {err}");
    }
    let out = gateway(&[]);
    assert!(!out.status.success(), "at least one upstream is needed");
}

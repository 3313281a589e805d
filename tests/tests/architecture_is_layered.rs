//! Tidy checks of repo-wide conventions: the dependency layering in ARCHITECTURE.md, a `//!`
//! paragraph atop every crate, no hash maps, floats or clocks in consensus code, and unsafe
//! code nowhere but in the kernels' calls into their AVX2 builds and into gemm.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every workspace crate: (directory, package name, dependency names).
fn crates() -> Vec<(PathBuf, String, Vec<String>)> {
    let ws: toml::Value =
        toml::from_str(&fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    let members = ws["workspace"]["members"].as_array().unwrap();
    members
        .iter()
        .map(|m| {
            let dir = root().join(m.as_str().unwrap());
            let manifest: toml::Value =
                toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
            let name = manifest["package"]["name"].as_str().unwrap().to_string();
            let deps = ["dependencies", "build-dependencies"]
                .iter()
                .filter_map(|t| manifest.get(*t).and_then(|d| d.as_table()))
                .flat_map(|t| t.keys().cloned())
                .collect();
            (dir, name, deps)
        })
        .collect()
}

#[test]
fn dependencies_follow_the_architecture_invariants() {
    for (_, name, deps) in crates() {
        let uses = |d: &str| deps.iter().any(|x| x == d);
        let is_module = name.starts_with("gpuchain-")
            && root()
                .join("x")
                .join(name.trim_start_matches("gpuchain-"))
                .exists();
        if is_module {
            for banned in [
                "gpuchain-chain",
                "gpuchain-compute",
                "gpuchain-provider",
                "gpuchain-verifier",
                "gpuchain-client",
                "burn",
            ] {
                assert!(
                    !uses(banned),
                    "{name} (consensus module) must not depend on {banned}"
                );
            }
        }
        if name == "gpuchain-client" {
            assert!(
                !uses("gpuchain-chain"),
                "client must use module types, never the app"
            );
        }
        // The state machine, its genesis and the simulator that drives it know nothing of
        // RPC or the command line: those live in node/, above the client.
        if name == "gpuchain-chain" || name == "gpuchain-genesis" || name == "gpuchain-sim" {
            for banned in [
                "gpuchain-client",
                "gpuchain-agent-kit",
                "gpuchain-node",
                "tendermint-rpc",
            ] {
                assert!(
                    !uses(banned),
                    "{name} is the state machine's side and must not depend on {banned}"
                );
            }
        }
        if name == "gpuchain-chain" || name == "gpuchain-genesis" {
            for banned in ["clap", "tokio"] {
                assert!(
                    !uses(banned),
                    "{name} is a library of the state machine, not a program: no {banned}"
                );
            }
        }
        if name == "gpuchain-compute" {
            for d in &deps {
                let internal = d.starts_with("gpuchain-");
                assert!(
                    !internal || d == "gpuchain-jobspec" || d == "gpuchain-kernels",
                    "compute may only use x/jobspec and kernels/, not {d}"
                );
            }
        }
        if name == "gpuchain-loadgen" {
            assert!(
                deps.iter().all(|d| !d.starts_with("gpuchain-")),
                "the load generator measures any CometBFT chain and knows nothing of gpuchain, not {deps:?}"
            );
        }
        // The C interface cometbft-gpuchain links is a shim over the node's app, no more.
        if name == "gpuchain-inprocess" {
            assert!(
                deps.iter()
                    .all(|d| !d.starts_with("gpuchain-") || d == "gpuchain-node"),
                "the in-process library only wraps the node's app, not {deps:?}"
            );
        }
        if name == "gpuchain-kernels" {
            assert!(
                deps.iter().all(|d| d == "gemm"),
                "kernels/ is inner loops and gemm's matrix products only, not {deps:?}"
            );
        }
        if name == "gpuchain-provider" {
            assert!(
                !uses("gpuchain-verifier"),
                "agents must not depend on each other"
            );
        }
        if name == "gpuchain-verifier" {
            assert!(
                !uses("gpuchain-provider"),
                "agents must not depend on each other"
            );
        }
        if name == "gpuchain-provider" || name == "gpuchain-verifier" {
            assert!(
                uses("gpuchain-agent-kit"),
                "{name} is built on the agent kit"
            );
        }
        if name == "gpuchain-agent-kit" {
            for banned in [
                "gpuchain-chain",
                "gpuchain-compute",
                "gpuchain-provider",
                "gpuchain-verifier",
                "burn",
            ] {
                assert!(
                    !uses(banned),
                    "the agent kit is chain-facing plumbing, not {banned}"
                );
            }
        }
        // The gateway routes the client's requests; it runs no model and is no provider.
        if name == "gpuchain-gateway" {
            for banned in [
                "gpuchain-chain",
                "gpuchain-compute",
                "gpuchain-provider",
                "gpuchain-verifier",
                "burn",
            ] {
                assert!(
                    !uses(banned),
                    "the gateway is the client's router, not {banned}"
                );
            }
        }
        // The explorer reads the chain through the client and the modules' types; it never
        // links the app (a node's state is read over RPC, never opened) or runs a job.
        if name == "gpuchain-explorer" {
            for banned in [
                "gpuchain-chain",
                "gpuchain-node",
                "gpuchain-compute",
                "gpuchain-provider",
                "gpuchain-verifier",
                "rocksdb",
                "burn",
            ] {
                assert!(
                    !uses(banned),
                    "the explorer reads the chain over RPC, it does not link {banned}"
                );
            }
        }
        // The node serves the app over ABCI; the test harnesses (tests/, sim/) call the app's
        // ABCI handlers as CometBFT does.
        let knows_abci = [
            "gpuchain-chain",
            "gpuchain-node",
            "gpuchain-tests",
            "gpuchain-sim",
        ];
        if !knows_abci.contains(&name.as_str()) {
            assert!(
                !uses("tendermint-abci"),
                "only chain/ and the node serving it know ABCI, but {name} uses tendermint-abci"
            );
        }
    }
}

/// Files under `dir` (recursively) whose text holds an `unsafe` block or function.
fn files_with_unsafe(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_with_unsafe(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).unwrap();
            if text.contains("unsafe {") || text.contains("unsafe fn") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn unsafe_code_is_forbidden_everywhere_but_the_kernels_model_file_mapping_heap_trimming_and_the_c_interface(
) {
    for (dir, name, _) in crates() {
        let manifest: toml::Value =
            toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let lints = manifest.get("lints");
        if name == "gpuchain-inprocess" {
            let level = lints.and_then(|l| l["rust"]["unsafe_code"].as_str());
            assert_eq!(
                level,
                Some("deny"),
                "{name} allows unsafe only where it says so"
            );
            assert_eq!(
                files_with_unsafe(&dir.join("src")),
                vec![dir.join("src/lib.rs")],
                "the in-process library's only unsafe code is its C interface"
            );
            continue;
        }
        if name == "gpuchain-kernels" || name == "gpuchain-compute" {
            let level = lints.and_then(|l| l["rust"]["unsafe_code"].as_str());
            assert_eq!(
                level,
                Some("deny"),
                "{name} allows unsafe only where it says so"
            );
            if name == "gpuchain-compute" {
                let mut files = files_with_unsafe(&dir.join("src"));
                files.sort();
                assert_eq!(
                    files,
                    vec![dir.join("src/gguf/file.rs"), dir.join("src/heap.rs")],
                    "compute's only unsafe code maps model files and hands freed heap back"
                );
            }
            continue;
        }
        assert_eq!(
            lints.and_then(|l| l["workspace"].as_bool()),
            Some(true),
            "{name} takes the workspace lints (unsafe code forbidden)"
        );
    }
    let ws: toml::Value =
        toml::from_str(&fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    assert_eq!(
        ws["workspace"]["lints"]["rust"]["unsafe_code"].as_str(),
        Some("forbid")
    );
}

/// The crash, dishonest and lazy test modes are compiled in only where the end-to-end test
/// crate is part of the build: no crate turns `test-hooks` on by default, and no crate but
/// gpuchain-tests turns it on in a dependency, so `cargo build --release -p gpuchain-node`
/// (or the provider or verifier) builds binaries without them.
#[test]
fn test_hooks_are_enabled_only_by_the_test_crate() {
    let mut with_hooks = Vec::new();
    for (dir, name, _) in crates() {
        let manifest: toml::Value =
            toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let features = manifest.get("features").and_then(|f| f.as_table());
        if let Some(features) = features {
            if features.contains_key("test-hooks") {
                with_hooks.push(name.clone());
            }
            let default = features.get("default").and_then(|d| d.as_array());
            assert!(
                !default.is_some_and(|d| d.iter().any(|f| f.as_str() == Some("test-hooks"))),
                "{name} turns its test hooks on by default"
            );
        }
        for table in ["dependencies", "build-dependencies"] {
            let Some(deps) = manifest.get(table).and_then(|d| d.as_table()) else {
                continue;
            };
            for (dep, spec) in deps {
                let enables = spec
                    .get("features")
                    .and_then(|f| f.as_array())
                    .is_some_and(|f| f.iter().any(|x| x.as_str() == Some("test-hooks")));
                assert!(
                    !enables || name == "gpuchain-tests",
                    "{name} turns on {dep}'s test hooks; only the end-to-end test crate may"
                );
            }
        }
    }
    with_hooks.sort();
    assert_eq!(
        with_hooks,
        ["gpuchain-chain", "gpuchain-provider", "gpuchain-verifier"],
        "the crates with test hooks changed: update this test and docs/operations.md"
    );
}

/// x/verify judges and x/auction pays: x/verify reaches the market only through
/// `gpuchain_auction::settlement` and the auction's public types, never its fee rules,
/// escrow, judging internals, module accounts or stored layouts directly.
#[test]
fn verify_uses_the_auction_only_through_its_settlement_interface() {
    let mut files = Vec::new();
    rust_files(&root().join("x/verify/src"), &mut files);
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if name == "test_utils.rs" || name.ends_with("tests.rs") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for line in text.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
            for internal in [
                "audit",
                "escrow",
                "judge",
                "module_account",
                "state_key",
                "retire",
            ] {
                assert!(
                    !line.contains(&format!("gpuchain_auction::{internal}")),
                    "{}: uses gpuchain_auction::{internal} directly; go through \
                     gpuchain_auction::settlement:\n{line}",
                    file.display()
                );
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_crate_opens_with_a_doc_paragraph() {
    for (dir, name, _) in crates() {
        for entry in ["src/lib.rs", "src/main.rs"] {
            let path = dir.join(entry);
            if let Ok(text) = fs::read_to_string(&path) {
                assert!(
                    text.starts_with("//!"),
                    "{name}: {} must start with a //! paragraph",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn consensus_code_has_no_hash_maps_floats_or_clocks() {
    let mut files = Vec::new();
    rust_files(&root().join("chain/src/app"), &mut files);
    rust_files(&root().join("chain/src/store"), &mut files);
    for (dir, _, _) in crates() {
        if dir.starts_with(root().join("x")) {
            rust_files(&dir.join("src"), &mut files);
        }
    }
    assert!(!files.is_empty());
    let banned = [
        "HashMap",
        "HashSet",
        "SystemTime",
        "Instant::now",
        "f32",
        "f64",
        "thread_rng",
        "OsRng",
    ];
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for word in banned {
            let hit = text.lines().any(|l| {
                !l.trim_start().starts_with("//")
                    && l.split(|c: char| !c.is_alphanumeric() && c != '_' && c != ':')
                        .any(|tok| tok == word || tok.ends_with(&format!("::{word}")))
            });
            assert!(
                !hit,
                "{} uses {word}, which consensus code must not",
                file.display()
            );
        }
    }
}

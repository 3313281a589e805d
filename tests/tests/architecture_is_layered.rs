//! Tidy checks of repo-wide conventions: the dependency layering in ARCHITECTURE.md, a `//!`
//! paragraph atop every crate, no hash maps, floats or clocks in consensus code, and unsafe
//! code nowhere but in the kernels' calls into their AVX2 builds.

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
        if name == "gpuchain-compute" {
            for d in &deps {
                let internal = d.starts_with("gpuchain-");
                assert!(
                    !internal || d == "gpuchain-jobspec" || d == "gpuchain-kernels",
                    "compute may only use x/jobspec and kernels/, not {d}"
                );
            }
        }
        if name == "gpuchain-kernels" {
            assert!(
                deps.is_empty(),
                "kernels/ is inner loops only, not {deps:?}"
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
        // The test harnesses (tests/, sim/) call the app's ABCI handlers as CometBFT does.
        if name != "gpuchain-chain" && name != "gpuchain-tests" && name != "gpuchain-sim" {
            assert!(
                !uses("tendermint-abci"),
                "only chain/ knows ABCI, but {name} uses tendermint-abci"
            );
        }
    }
}

#[test]
fn unsafe_code_is_forbidden_everywhere_but_the_kernels() {
    for (dir, name, _) in crates() {
        let manifest: toml::Value =
            toml::from_str(&fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let lints = manifest.get("lints");
        if name == "gpuchain-kernels" {
            let level = lints.and_then(|l| l["rust"]["unsafe_code"].as_str());
            assert_eq!(
                level,
                Some("deny"),
                "kernels/ allows unsafe only where it says so"
            );
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

//! scripts/install-deps.sh decides what to install by the exact files the build uses, so a
//! fresh machine image (which has libclang-cpp14 but neither libclang-dev nor clang) gets
//! them installed. The script's checks run here against simulated images: a temporary root
//! for the library search and a PATH holding only the image's commands.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(|p| p.join("scripts/install-deps.sh"))
        .unwrap_or_default()
}

/// A simulated image: a root for libraries and a bin directory for commands.
struct Image {
    root: tempfile::TempDir,
}

impl Image {
    /// What the project's fresh image has (env's installed-go.txt): g++ and gcc, python3 with
    /// pip and venv, unzip, Go, npm, openssl, LLVM 14's runtime libraries including
    /// libclang-cpp.so.14, and no clang, libclang-dev or chromium.
    fn fresh() -> Image {
        let image = Image {
            root: tempfile::tempdir().unwrap(),
        };
        for cmd in ["c++", "gcc", "unzip", "go", "npm", "openssl", "bash"] {
            image.command(cmd, 0);
        }
        image.command("python3", 0);
        image.lib("usr/lib/llvm-14/lib/libclang-cpp.so.14");
        image.lib("usr/lib/x86_64-linux-gnu/libclang-cpp.so.14");
        image.lib("usr/lib/llvm-14/lib/libLLVM-14.so.1");
        image
    }

    fn bin(&self) -> PathBuf {
        self.root.path().join("bin")
    }

    /// A command that exits with `status` whatever it is asked.
    fn command(&self, name: &str, status: i32) {
        std::fs::create_dir_all(self.bin()).unwrap();
        let path = self.bin().join(name);
        let body = if name == "bash" {
            "#!/bin/bash\nexec /bin/bash \"$@\"\n".to_string()
        } else {
            format!("#!/bin/sh\nexit {status}\n")
        };
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn remove_command(&self, name: &str) {
        std::fs::remove_file(self.bin().join(name)).unwrap();
    }

    fn lib(&self, rel: &str) {
        let path = self.root.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"\x7fELF").unwrap();
    }

    fn link(&self, rel: &str, target: &str) {
        let path = self.root.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    /// The Debian packages the script would install, in its order.
    fn missing(&self) -> Vec<String> {
        let out = Command::new("/bin/bash")
            .arg(script())
            .arg("--check")
            .env_clear()
            .env("PATH", self.bin())
            .env("GPUCHAIN_SYSROOT", self.root.path())
            .output()
            .unwrap();
        let listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(
            out.status.success(),
            listed.is_empty(),
            "exit status and list disagree: {listed:?} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        listed
    }
}

fn root_path(image: &Image) -> &Path {
    image.root.path()
}

#[test]
fn a_fresh_image_gets_libclang_dev_clang_and_chromium() {
    let image = Image::fresh();
    assert_eq!(image.missing(), ["libclang-dev", "clang", "chromium"]);
}

#[test]
fn libclang_counts_only_as_the_file_bindgen_loads() {
    let image = Image::fresh();
    image.command("clang", 0);
    image.command("chromium", 0);
    // The runtime library alone (libclang1-14) is not what the build links.
    image.lib("usr/lib/llvm-14/lib/libclang-14.so.1");
    assert_eq!(image.missing(), ["libclang-dev"]);
    // A dangling development link does not count either.
    image.link(
        "usr/lib/llvm-14/lib/libclang-14.so",
        "libclang-14.so.missing",
    );
    assert_eq!(image.missing(), ["libclang-dev"]);
    // libclang-dev's libclang.so, pointing at the real library, does.
    image.link("usr/lib/llvm-14/lib/libclang.so", "libclang-14.so.1");
    assert!(image.missing().is_empty());
}

#[test]
fn a_versioned_libclang_or_libclang_path_is_accepted() {
    let image = Image::fresh();
    image.command("clang", 0);
    image.command("chromium", 0);
    image.lib("usr/lib/x86_64-linux-gnu/libclang-16.so");
    assert!(image.missing().is_empty());

    let custom = Image::fresh();
    custom.command("clang", 0);
    custom.command("chromium", 0);
    custom.lib("opt/llvm/lib/libclang.so");
    assert_eq!(custom.missing(), ["libclang-dev"], "not on a searched path");
    let out = Command::new("/bin/bash")
        .arg(script())
        .arg("--check")
        .env_clear()
        .env("PATH", custom.bin())
        .env("GPUCHAIN_SYSROOT", root_path(&custom))
        .env("LIBCLANG_PATH", "/opt/llvm/lib")
        .output()
        .unwrap();
    assert!(out.status.success(), "LIBCLANG_PATH is searched first");
}

#[test]
fn each_missing_tool_names_its_package() {
    let image = Image::fresh();
    image.command("clang", 0);
    image.command("chromium", 0);
    image.lib("usr/lib/llvm-14/lib/libclang.so");
    for (cmd, package) in [
        ("c++", "g++"),
        ("gcc", "gcc"),
        ("unzip", "unzip"),
        ("go", "golang-go"),
        ("chromium", "chromium"),
        ("npm", "npm"),
        ("openssl", "openssl"),
    ] {
        image.remove_command(cmd);
        assert_eq!(image.missing(), [package], "without {cmd}");
        image.command(cmd, 0);
    }
    // A python3 whose `-m pip` and `import ensurepip, venv` fail lacks pip and venv.
    image.command("python3", 1);
    assert_eq!(image.missing(), ["python3-pip", "python3-venv"]);
    image.remove_command("python3");
    assert_eq!(image.missing(), ["python3", "python3-pip", "python3-venv"]);
}

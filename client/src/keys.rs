//! Key files: one JSON file per key under `<home>/keys/`, mode 0600, the ed25519 secret
//! either in hex or sealed with a passphrase (argon2id → ChaCha20-Poly1305).

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, ensure, Context, Result};
use argon2::Argon2;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use ed25519_dalek::SigningKey;
use gpuchain_types::Address;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// What a key file holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct KeyFile {
    name: String,
    address: Address,
    public_key: String,
    /// `none` or `argon2id-chacha20poly1305`.
    encryption: String,
    /// Hex of the 32-byte secret, or of its ciphertext.
    secret: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    salt: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    nonce: String,
}

/// Public facts about a stored key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInfo {
    /// Local name.
    pub name: String,
    /// Account address.
    pub address: Address,
    /// Hex ed25519 public key.
    pub public_key: String,
    /// Whether a passphrase is needed to use it.
    pub encrypted: bool,
}

/// A directory of key files.
pub struct Keystore {
    dir: PathBuf,
}

fn valid_name(name: &str) -> Result<()> {
    ensure!(
        !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "key name {name:?} must be 1-64 characters of letters, digits, '-' or '_'"
    );
    Ok(())
}

/// The key-derivation parameters of sealed key files, written out rather than taken from the
/// crate's defaults so that an upgrade of the crate cannot make existing files unreadable
/// (docs/protocol.md "Key files"): argon2id v1.3, 19,456 KiB, 2 passes, 1 lane, 32 bytes.
fn kdf() -> Result<Argon2<'static>> {
    let params = argon2::Params::new(19_456, 2, 1, Some(32))
        .map_err(|e| anyhow!("argon2 parameters: {e}"))?;
    Ok(Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        params,
    ))
}

/// The `secret` field of a sealed key file: ChaCha20-Poly1305 (12-byte nonce, no associated
/// data) of the 32-byte seed under the passphrase's argon2id key.
fn seal(passphrase: &str, salt: &[u8; 16], nonce: &[u8; 12], seed: &[u8; 32]) -> Result<Vec<u8>> {
    cipher(passphrase, salt)?
        .encrypt(Nonce::from_slice(nonce), &seed[..])
        .map_err(|_| anyhow!("encrypting key"))
}

fn cipher(passphrase: &str, salt: &[u8]) -> Result<ChaCha20Poly1305> {
    let mut key = Zeroizing::new([0u8; 32]);
    kdf()?
        .hash_password_into(passphrase.as_bytes(), salt, key.as_mut())
        .map_err(|e| anyhow!("deriving key from passphrase: {e}"))?;
    Ok(ChaCha20Poly1305::new(Key::from_slice(key.as_ref())))
}

impl Keystore {
    /// Opens `dir`, creating it (mode 0700) if needed.
    pub fn open(dir: &Path) -> Result<Keystore> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        Ok(Keystore {
            dir: dir.to_path_buf(),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// Generates and stores a new key.
    pub fn create(&self, name: &str, passphrase: Option<&str>) -> Result<KeyInfo> {
        self.import(name, SigningKey::generate(&mut OsRng), passphrase)
    }

    /// Stores an existing key under `name`; refuses to overwrite.
    pub fn import(&self, name: &str, key: SigningKey, passphrase: Option<&str>) -> Result<KeyInfo> {
        valid_name(name)?;
        let path = self.path(name);
        ensure!(
            !path.exists(),
            "a key named {name:?} already exists at {}",
            path.display()
        );
        let public = key.verifying_key().to_bytes();
        let secret = Zeroizing::new(key.to_bytes());
        let mut file = KeyFile {
            name: name.to_string(),
            address: Address::from_public_key(&public),
            public_key: hex::encode(public),
            encryption: "none".into(),
            secret: String::new(),
            salt: String::new(),
            nonce: String::new(),
        };
        match passphrase {
            None => file.secret = hex::encode(secret.as_ref()),
            Some(pass) => {
                let mut salt = [0u8; 16];
                let mut nonce = [0u8; 12];
                OsRng.fill_bytes(&mut salt);
                OsRng.fill_bytes(&mut nonce);
                let sealed = seal(pass, &salt, &nonce, &secret)?;
                file.encryption = "argon2id-chacha20poly1305".into();
                file.secret = hex::encode(sealed);
                file.salt = hex::encode(salt);
                file.nonce = hex::encode(nonce);
            }
        }
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        out.write_all(&serde_json::to_vec_pretty(&file)?)?;
        Ok(info(&file))
    }

    fn read(&self, name: &str) -> Result<KeyFile> {
        valid_name(name)?;
        let path = self.path(name);
        let bytes = fs::read(&path).with_context(|| {
            format!(
                "no key named {name:?} in {} (create it with `keys add {name}`)",
                self.dir.display()
            )
        })?;
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
    }

    /// Public facts about `name`.
    pub fn show(&self, name: &str) -> Result<KeyInfo> {
        Ok(info(&self.read(name)?))
    }

    /// Every key, by name.
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "json") {
                if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                    out.push(self.show(stem)?);
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The signing key; `passphrase` is needed for encrypted keys.
    pub fn signing_key(&self, name: &str, passphrase: Option<&str>) -> Result<SigningKey> {
        let file = self.read(name)?;
        let secret: Zeroizing<Vec<u8>> = match file.encryption.as_str() {
            "none" => Zeroizing::new(hex::decode(&file.secret)?),
            "argon2id-chacha20poly1305" => {
                let Some(pass) = passphrase else {
                    bail!("key {name:?} is sealed with a passphrase: set GPUCHAIN_PASSPHRASE");
                };
                let salt = hex::decode(&file.salt)?;
                let nonce = hex::decode(&file.nonce)?;
                ensure!(nonce.len() == 12, "key file {name:?} has a bad nonce");
                Zeroizing::new(
                    cipher(pass, &salt)?
                        .decrypt(
                            Nonce::from_slice(&nonce),
                            hex::decode(&file.secret)?.as_slice(),
                        )
                        .map_err(|_| anyhow!("wrong passphrase for key {name:?}"))?,
                )
            }
            other => bail!("key {name:?} uses unknown encryption {other:?}"),
        };
        let bytes: [u8; 32] = secret
            .as_slice()
            .try_into()
            .map_err(|_| anyhow!("key {name:?} is not 32 bytes"))?;
        let key = SigningKey::from_bytes(&bytes);
        ensure!(
            hex::encode(key.verifying_key().to_bytes()) == file.public_key,
            "key file {name:?} is corrupt: secret and public key disagree"
        );
        Ok(key)
    }
}

fn info(file: &KeyFile) -> KeyInfo {
    KeyInfo {
        name: file.name.clone(),
        address: file.address,
        public_key: file.public_key.clone(),
        encrypted: file.encryption != "none",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_private_files_and_passphrases_protect_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Keystore::open(dir.path()).unwrap();
        let plain = store.create("alice", None).unwrap();
        let sealed = store.create("bob", Some("correct horse")).unwrap();
        let mode = fs::metadata(dir.path().join("alice.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!plain.encrypted && sealed.encrypted);
        let key = store.signing_key("alice", None).unwrap();
        assert_eq!(
            Address::from_public_key(&key.verifying_key().to_bytes()),
            plain.address
        );
        assert!(store.signing_key("bob", None).is_err());
        assert!(store.signing_key("bob", Some("wrong")).is_err());
        store.signing_key("bob", Some("correct horse")).unwrap();
        assert!(store.create("alice", None).is_err(), "no silent overwrite");
        let names: Vec<_> = store.list().unwrap().into_iter().map(|k| k.name).collect();
        assert_eq!(names, vec!["alice", "bob"]);
    }

    /// docs/protocol.md's sealed key file opens to its seed, and sealing the seed with the
    /// file's salt and nonce gives the file's bytes: the format is what the document says.
    #[test]
    fn sealed_key_file_vector_in_the_protocol_document_opens() {
        let doc = include_str!("../../docs/protocol.md");
        let tag = "```json key-file-vector";
        let start = doc.find(tag).unwrap() + tag.len();
        let end = start + doc[start..].find("```").unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc[start..end]).unwrap();
        let pass = v["passphrase"].as_str().unwrap();
        let file = &v["file"];
        let hex_field = |k: &str| hex::decode(file[k].as_str().unwrap()).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let store = Keystore::open(dir.path()).unwrap();
        fs::write(dir.path().join("vector.json"), file.to_string()).unwrap();
        let key = store.signing_key("vector", Some(pass)).unwrap();
        assert_eq!(hex::encode(key.to_bytes()), v["seed"].as_str().unwrap());
        assert!(store.signing_key("vector", Some("wrong")).is_err());

        let salt: [u8; 16] = hex_field("salt").try_into().unwrap();
        let nonce: [u8; 12] = hex_field("nonce").try_into().unwrap();
        let mut derived = [0u8; 32];
        kdf()
            .unwrap()
            .hash_password_into(pass.as_bytes(), &salt, &mut derived)
            .unwrap();
        assert_eq!(hex::encode(derived), v["argon2id_key"].as_str().unwrap());
        assert_eq!(
            seal(pass, &salt, &nonce, &key.to_bytes()).unwrap(),
            hex_field("secret")
        );
    }
}

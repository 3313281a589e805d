//! The GGUF container (version 2 and 3): header, metadata key-values, tensor table and the
//! aligned data section. Everything is little-endian; strings are a u64 length and UTF-8.

use std::collections::BTreeMap;

use crate::{Error, Result};

/// A metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Any unsigned integer type, widened.
    U64(u64),
    /// Any signed integer type, widened.
    I64(i64),
    /// f32 or f64, widened.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// An array of values.
    Array(Vec<Value>),
}

impl Value {
    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::U64(v) => Some(*v),
            Value::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The value as a float, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::F64(v) => Some(*v),
            Value::U64(v) => Some(*v as f64),
            Value::I64(v) => Some(*v as f64),
            _ => None,
        }
    }

    /// The value as a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// One tensor's entry in the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// GGUF dims, innermost first (`ne[0]` is the row length).
    pub dims: Vec<u64>,
    /// The ggml type id.
    pub kind: u32,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
    /// Which file of a split model holds it (0 for a single file).
    pub shard: usize,
}

impl TensorInfo {
    /// Number of values.
    pub fn numel(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Dims outermost first (the row-major layout PyTorch uses).
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|d| *d as usize).collect()
    }
}

/// A parsed GGUF model over its bytes: one file, or every file of a split one.
pub struct Gguf<'a> {
    /// Metadata by key (a split model's: its first file's).
    pub metadata: BTreeMap<String, Value>,
    /// Tensors in file order.
    pub tensors: Vec<TensorInfo>,
    /// Each file's bytes and where its data section starts.
    shards: Vec<(&'a [u8], usize)>,
}

/// How many files a model is split into (`split.count`; 1 for a whole file) and which of
/// them this one is (`split.no`, from 0).
fn split_of(metadata: &BTreeMap<String, Value>) -> (u64, u64) {
    let get = |key: &str| metadata.get(key).and_then(Value::as_u64);
    (
        get("split.count").unwrap_or(1),
        get("split.no").unwrap_or(0),
    )
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn bad(what: impl Into<String>) -> Error {
    Error::BadWeights(format!("GGUF: {}", what.into()))
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .ok_or_else(|| bad("length overflow"))?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| bad(format!("truncated at byte {}", self.at)))?;
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.take(N)?;
        b.try_into().map_err(|_| bad("short read"))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn len(&mut self) -> Result<usize> {
        usize::try_from(self.u64()?).map_err(|_| bad("length does not fit in memory"))
    }

    fn string(&mut self) -> Result<String> {
        let n = self.len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| bad("a string is not UTF-8"))
    }

    fn value(&mut self, kind: u32, depth: u32) -> Result<Value> {
        Ok(match kind {
            0 => Value::U64(u64::from(self.array::<1>()?[0])),
            1 => Value::I64(i64::from(i8::from_le_bytes(self.array()?))),
            2 => Value::U64(u64::from(u16::from_le_bytes(self.array()?))),
            3 => Value::I64(i64::from(i16::from_le_bytes(self.array()?))),
            4 => Value::U64(u64::from(self.u32()?)),
            5 => Value::I64(i64::from(i32::from_le_bytes(self.array()?))),
            6 => Value::F64(f64::from(f32::from_le_bytes(self.array()?))),
            7 => Value::Bool(self.array::<1>()?[0] != 0),
            8 => Value::Str(self.string()?),
            9 if depth < 4 => {
                let inner = self.u32()?;
                let n = self.len()?;
                // Every item takes at least one byte: a count beyond the file is a lie.
                if n > self.bytes.len() {
                    return Err(bad(format!("array of {n} items in a smaller file")));
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(inner, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.array()?)),
            12 => Value::F64(f64::from_le_bytes(self.array()?)),
            other => return Err(bad(format!("unknown metadata type {other}"))),
        })
    }
}

impl<'a> Gguf<'a> {
    /// Parses the header, metadata and tensor table of `bytes`, a whole model. One file of a
    /// split model is refused (see [`Gguf::parse_split`]).
    pub fn parse(bytes: &'a [u8]) -> Result<Gguf<'a>> {
        let g = Self::parse_file(bytes, 0)?;
        match split_of(&g.metadata) {
            (0 | 1, _) => Ok(g),
            (count, no) => Err(bad(format!(
                "file {} of a model split into {count}: load all of its files together",
                no + 1
            ))),
        }
    }

    /// Parses the files of a split model (llama.cpp's `gguf-split`: `split.count` files,
    /// each with its own tensor table), given in order, as one model with the first file's
    /// metadata.
    pub fn parse_split(parts: &[&'a [u8]]) -> Result<Gguf<'a>> {
        let mut model: Option<Gguf<'a>> = None;
        for (i, bytes) in parts.iter().enumerate() {
            let part = Self::parse_file(bytes, i)?;
            let (count, no) = split_of(&part.metadata);
            if count != parts.len() as u64 || no != i as u64 {
                return Err(bad(format!(
                    "file {} given is file {} of {count} of its model, not {} of {}",
                    i + 1,
                    no + 1,
                    i + 1,
                    parts.len()
                )));
            }
            match &mut model {
                None => model = Some(part),
                Some(m) => {
                    for t in &part.tensors {
                        if m.tensor(&t.name).is_some() {
                            return Err(bad(format!("tensor {} is in two files", t.name)));
                        }
                    }
                    m.tensors.extend(part.tensors);
                    m.shards.extend(part.shards);
                }
            }
        }
        let model = model.ok_or_else(|| bad("no files given"))?;
        if let Some(expected) = model.get("split.tensors.count").and_then(Value::as_u64) {
            if expected != model.tensors.len() as u64 {
                return Err(bad(format!(
                    "the files hold {} tensors, the model {expected}",
                    model.tensors.len()
                )));
            }
        }
        Ok(model)
    }

    /// One file's header, metadata and tensor table; its tensors are marked as in `shard`.
    fn parse_file(bytes: &'a [u8], shard: usize) -> Result<Gguf<'a>> {
        let mut c = Cursor { bytes, at: 0 };
        if c.take(4)? != b"GGUF" {
            return Err(bad("not a GGUF file (magic)"));
        }
        let version = c.u32()?;
        if !(2..=3).contains(&version) {
            return Err(bad(format!("version {version} (2 and 3 are read)")));
        }
        let (n_tensors, n_kv) = (c.len()?, c.len()?);
        if n_tensors > bytes.len() || n_kv > bytes.len() {
            return Err(bad("counts larger than the file"));
        }
        let mut metadata = BTreeMap::new();
        for _ in 0..n_kv {
            let key = c.string()?;
            let kind = c.u32()?;
            metadata.insert(key, c.value(kind, 0)?);
        }
        let mut tensors = Vec::with_capacity(n_tensors);
        for _ in 0..n_tensors {
            let name = c.string()?;
            let n_dims = c.u32()?;
            if n_dims == 0 || n_dims > 4 {
                return Err(bad(format!("tensor {name} has {n_dims} dims")));
            }
            let dims = (0..n_dims).map(|_| c.u64()).collect::<Result<Vec<_>>>()?;
            let kind = c.u32()?;
            let offset = c.u64()?;
            tensors.push(TensorInfo {
                name,
                dims,
                kind,
                offset,
                shard,
            });
        }
        let align = metadata
            .get("general.alignment")
            .and_then(Value::as_u64)
            .unwrap_or(32)
            .max(1) as usize;
        let data_start = c.at.div_ceil(align) * align;
        Ok(Gguf {
            metadata,
            tensors,
            shards: vec![(bytes, data_start)],
        })
    }

    /// A metadata value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    /// A required unsigned metadata value.
    pub fn u64(&self, key: &str) -> Result<u64> {
        self.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(format!("missing integer `{key}`")))
    }

    /// A tensor's entry.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// A tensor's values as f32, dequantised (see [`super::dequant`]).
    pub fn f32_values(&self, info: &TensorInfo) -> Result<Vec<f32>> {
        let numel = usize::try_from(info.numel()).map_err(|_| bad("tensor too large"))?;
        super::dequant::to_f32(info.kind, self.tensor_bytes(info)?, numel)
    }

    /// A tensor's stored bytes (exactly [`super::dequant::byte_size`] of them).
    pub fn tensor_bytes(&self, info: &TensorInfo) -> Result<&'a [u8]> {
        let numel = usize::try_from(info.numel()).map_err(|_| bad("tensor too large"))?;
        let size = super::dequant::byte_size(info.kind, numel).ok_or_else(|| {
            bad(format!(
                "tensor {}: unsupported type {}",
                info.name, info.kind
            ))
        })?;
        let (bytes, data_start) = *self
            .shards
            .get(info.shard)
            .ok_or_else(|| bad(format!("tensor {} is in no file given", info.name)))?;
        let start = usize::try_from(info.offset)
            .ok()
            .and_then(|o| o.checked_add(data_start))
            .ok_or_else(|| bad("offset overflow"))?;
        let data = start
            .checked_add(size)
            .and_then(|end| bytes.get(start..end))
            .ok_or_else(|| {
                bad(format!(
                    "tensor {} runs past the end of the file",
                    info.name
                ))
            })?;
        Ok(data)
    }
}

//! Labelled sentences: the dataset blob of a sentence-classifier fine-tuning job.
//!
//! The blob is JSON: `{"format": "gpuchain.sentences.v1", "classes": [...], "train": [...],
//! "test": [...]}`, each example `{"ids": [...], "label": n}` with the WordPiece ids of the
//! model's own tokenizer (`[CLS]` … `[SEP]`). The client tokenises once, so providers and
//! verifiers need no tokenizer and cannot tokenise differently.

use serde::{Deserialize, Serialize};

use crate::embed::tokenize::MAX_SEQ_LEN;
use crate::embed::SentenceTokenizer;
use crate::{Error, Result};

/// The `format` tag of a sentence dataset.
pub const SENTENCES_FORMAT: &str = "gpuchain.sentences.v1";

/// Most classes a classifier job may have.
pub const MAX_CLASSES: usize = 16;

/// One labelled sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    /// Token ids, with `[CLS]` and `[SEP]`.
    pub ids: Vec<u32>,
    /// Class index into [`SentenceDataset::classes`].
    pub label: u8,
}

/// A sentence classification dataset with its fixed train/test split.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentenceDataset {
    /// Always [`SENTENCES_FORMAT`].
    pub format: String,
    /// Class names, by label.
    pub classes: Vec<String>,
    /// Examples the workers train on (worker `w` of `k` gets those with `i % k == w`).
    pub train: Vec<Example>,
    /// Held-out examples the coordinator scores the model on.
    pub test: Vec<Example>,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::BadInput(msg.into())
}

impl SentenceDataset {
    /// Parses and checks a dataset blob.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let d: SentenceDataset =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("sentence dataset: {e}")))?;
        if d.format != SENTENCES_FORMAT {
            return Err(bad(format!(
                "sentence dataset format `{}`; expected `{SENTENCES_FORMAT}`",
                d.format
            )));
        }
        if !(2..=MAX_CLASSES).contains(&d.classes.len()) {
            return Err(bad(format!(
                "{} classes; a classifier has 2 to {MAX_CLASSES}",
                d.classes.len()
            )));
        }
        if d.train.is_empty() || d.test.is_empty() {
            return Err(bad("the train and test splits must both have examples"));
        }
        for (split, examples) in [("train", &d.train), ("test", &d.test)] {
            for (i, e) in examples.iter().enumerate() {
                if usize::from(e.label) >= d.classes.len() {
                    return Err(bad(format!("{split} example {i}: label {}", e.label)));
                }
                if e.ids.is_empty() || e.ids.len() > MAX_SEQ_LEN {
                    return Err(bad(format!(
                        "{split} example {i}: {} tokens; 1 to {MAX_SEQ_LEN} allowed",
                        e.ids.len()
                    )));
                }
            }
        }
        Ok(d)
    }

    /// The blob's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The Rotten Tomatoes snippets (`scripts/fetch-reviews.sh`: a CSV with a `category`
    /// of `fresh`, `rotten` or `plot`, and a `text`) as a two-class dataset, `rotten` = 0
    /// and `fresh` = 1, plot summaries left out. Every fifth review, in file order, is held
    /// out for the test split.
    pub fn from_reviews_csv(csv: &str, tokenizer: &SentenceTokenizer) -> Result<Self> {
        Self::from_csv(csv, "text", "category", &["rotten", "fresh"], 5, tokenizer)
    }

    /// A dataset from a CSV with a header row: the sentence in column `text`, its class
    /// name in column `label`. `classes` names the classes in label order; rows of other
    /// classes are left out. Every `test_every`-th kept row, in file order, is held out for
    /// the test split.
    pub fn from_csv(
        csv: &str,
        text: &str,
        label: &str,
        classes: &[&str],
        test_every: usize,
        tokenizer: &SentenceTokenizer,
    ) -> Result<Self> {
        if test_every < 2 {
            return Err(bad("hold out every 2nd row or fewer (test_every ≥ 2)"));
        }
        let rows = parse_csv(csv)?;
        let header = rows.first().ok_or_else(|| bad("empty CSV"))?;
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| bad(format!("the CSV has no `{name}` column")))
        };
        let (category, text) = (col(label)?, col(text)?);
        let mut labelled = Vec::new();
        for row in &rows[1..] {
            let (Some(c), Some(t)) = (row.get(category), row.get(text)) else {
                continue;
            };
            if let Some(label) = classes.iter().position(|k| k == c) {
                labelled.push((t.trim().to_string(), label as u8));
            }
        }
        let texts: Vec<String> = labelled.iter().map(|(t, _)| t.clone()).collect();
        let ids = tokenizer.encode_all(&texts)?;
        let mut d = SentenceDataset {
            format: SENTENCES_FORMAT.into(),
            classes: classes.iter().map(|c| c.to_string()).collect(),
            train: Vec::new(),
            test: Vec::new(),
        };
        for (i, (ids, (_, label))) in ids.into_iter().zip(&labelled).enumerate() {
            let e = Example { ids, label: *label };
            if i % test_every == test_every - 1 {
                d.test.push(e);
            } else {
                d.train.push(e);
            }
        }
        Self::parse(&d.to_bytes())
    }
}

/// Rows of RFC 4180 CSV: fields separated by commas, quoted fields may hold commas,
/// newlines and doubled quotes.
fn parse_csv(text: &str) -> Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, '\r') => {}
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(bad("CSV ends inside a quoted field"));
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_keep_quoted_commas_newlines_and_quotes() {
        let rows = parse_csv("a,b\r\n\"x, \"\"y\"\"\nz\",2\nlast,").unwrap();
        assert_eq!(rows[0], ["a", "b"]);
        assert_eq!(rows[1], ["x, \"y\"\nz", "2"]);
        assert_eq!(rows[2], ["last", ""]);
        assert!(parse_csv("\"open").is_err());
    }

    #[test]
    fn datasets_with_bad_labels_lengths_or_splits_are_refused() {
        let ok = SentenceDataset {
            format: SENTENCES_FORMAT.into(),
            classes: vec!["no".into(), "yes".into()],
            train: vec![Example {
                ids: vec![101, 7, 102],
                label: 1,
            }],
            test: vec![Example {
                ids: vec![101, 102],
                label: 0,
            }],
        };
        assert_eq!(SentenceDataset::parse(&ok.to_bytes()).unwrap(), ok);
        let mut label = ok.clone();
        label.train[0].label = 2;
        let mut long = ok.clone();
        long.test[0].ids = vec![1; MAX_SEQ_LEN + 1];
        let mut empty = ok.clone();
        empty.test.clear();
        let mut one_class = ok.clone();
        one_class.classes.truncate(1);
        let mut format = ok;
        format.format = "v0".into();
        for d in [label, long, empty, one_class, format] {
            assert!(SentenceDataset::parse(&d.to_bytes()).is_err(), "{d:?}");
        }
    }
}

use serde::Serialize;

/// `--output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// Human-readable lines.
    Text,
    /// One JSON document.
    Json,
}

/// Prints results in the chosen format.
pub(crate) struct Output {
    format: OutputFormat,
}

impl Output {
    pub(crate) fn new(format: OutputFormat) -> Self {
        Output { format }
    }

    /// Prints `value` as JSON, or `text` for humans.
    pub(crate) fn print<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        match self.format {
            OutputFormat::Json => match serde_json::to_string_pretty(value) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("error: cannot encode output: {e}"),
            },
            OutputFormat::Text => println!("{}", text()),
        }
    }

    /// Prints one item of a stream: a compact JSON line, or `text` for humans.
    pub(crate) fn line<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        match self.format {
            OutputFormat::Json => match serde_json::to_string(value) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("error: cannot encode output: {e}"),
            },
            OutputFormat::Text => println!("{}", text()),
        }
    }
}

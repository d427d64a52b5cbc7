//! Texts for error messages that every layer uses: an error with its chain of causes, and a
//! chunk of input quoted (cut to 500 characters).

/// An error and its causes, joined with `: `.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A stream chunk quoted for an error message (cut to 500 characters).
pub fn quote_chunk(data: &str) -> String {
    const MAX: usize = 500;
    if data.chars().count() <= MAX {
        data.to_string()
    } else {
        let cut: String = data.chars().take(MAX).collect();
        format!("{cut}… ({} bytes)", data.len())
    }
}

//! A few helpers for hand-written argument parsing (`--flag value` and `--flag=value`).

/// Splits `--flag=value` into (`--flag`, `Some("value")`); other arguments are returned whole.
pub(crate) fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

/// The value of `flag`: the inline one, or the next argument.
pub(crate) fn value(
    flag: &str,
    inline: Option<&str>,
    rest: &mut impl Iterator<Item = String>,
) -> Result<String, String> {
    inline
        .map(String::from)
        .or_else(|| rest.next())
        .ok_or_else(|| format!("{flag} needs a value"))
}

/// Parses a positive whole number given to `flag`.
pub(crate) fn positive(flag: &str, text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{flag} wants a positive whole number, got `{text}`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_reads_values() {
        assert_eq!(split_flag("--repeat=3"), ("--repeat", Some("3")));
        assert_eq!(split_flag("--repeat"), ("--repeat", None));
        assert_eq!(split_flag("a=b"), ("a=b", None));
        let mut rest = vec!["5".to_string()].into_iter();
        assert_eq!(value("--repeat", None, &mut rest), Ok("5".into()));
        assert!(value("--repeat", None, &mut rest)
            .unwrap_err()
            .contains("needs a value"));
        assert_eq!(positive("--repeat", "2"), Ok(2));
        assert!(positive("--repeat", "0").is_err());
    }
}

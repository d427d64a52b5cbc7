//! [`Models::model`]: a model looked up by provider and id, with "did you mean" on a miss.

use super::{Models, ModelsError};
use crate::models::closest;
use crate::types::model::Model;

impl Models {
    /// The model `id` of `provider`, or [`ModelsError::UnknownModel`] naming the closest
    /// `provider/id` pairs the collection has ("did you mean"): ids a few edits away at this
    /// provider, else the same id at other providers, else pairs a few edits away anywhere.
    ///
    /// ```
    /// let models = oxpi_ai::Models::new();
    /// assert_eq!(models.model("anthropic", "claude-haiku-4-5").unwrap().id, "claude-haiku-4-5");
    /// let err = models.model("anthropic", "claude-haiku-4.5").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "Unknown model: anthropic/claude-haiku-4.5 \
    ///      (did you mean anthropic/claude-haiku-4-5 or anthropic/claude-haiku-5-5?)"
    /// );
    /// ```
    pub fn model(&self, provider: &str, id: &str) -> Result<&Model, ModelsError> {
        if let Some(model) = self.get_model(provider, id) {
            return Ok(model);
        }
        let all = self.models(None);
        let pairs: Vec<String> = all
            .iter()
            .map(|m| format!("{}/{}", m.provider, m.id))
            .collect();
        let mut suggestions: Vec<String> = closest(
            id,
            self.models(Some(provider)).iter().map(|m| m.id.as_str()),
        )
        .into_iter()
        .map(|found| format!("{provider}/{found}"))
        .collect();
        if suggestions.is_empty() {
            suggestions = all
                .iter()
                .filter(|m| m.id == id)
                .map(|m| format!("{}/{}", m.provider, m.id))
                .take(3)
                .collect();
        }
        if suggestions.is_empty() {
            suggestions = closest(
                &format!("{provider}/{id}"),
                pairs.iter().map(String::as_str),
            )
            .into_iter()
            .map(str::to_string)
            .collect();
        }
        Err(ModelsError::UnknownModel {
            provider: provider.to_string(),
            id: id.to_string(),
            suggestions,
        })
    }
}

/// ` (did you mean a, b or c?)`, or nothing when there is no suggestion.
pub(crate) fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_read_as_a_sentence() {
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(did_you_mean(&["a".into()]), " (did you mean a?)");
        assert_eq!(
            did_you_mean(&["a".into(), "b".into(), "c".into()]),
            " (did you mean a, b or c?)"
        );
    }

    #[test]
    fn a_miss_names_the_closest_models() {
        let models = Models::new();
        let text = |p: &str, id: &str| models.model(p, id).unwrap_err().to_string();
        // The id at another provider.
        assert!(
            text("openai", "claude-haiku-4-5").contains("anthropic/claude-haiku-4-5"),
            "{}",
            text("openai", "claude-haiku-4-5")
        );
        // A misspelt provider.
        assert!(text("antropic", "claude-haiku-4-5x").contains("anthropic/claude-haiku-4-5"));
        // Nothing close: no suggestion.
        assert_eq!(
            text("anthropic", "zzzzzzzzzzzzzzzzzzzz"),
            "Unknown model: anthropic/zzzzzzzzzzzzzzzzzzzz"
        );
    }
}

//! pi's thinking levels (`off` … `max`) and which of them a model takes
//! (`getSupportedThinkingLevels`, `clampThinkingLevel`).
//!
//! ```
//! use oxpi_ai::{clamp_thinking_level, supported_thinking_levels, Model, ThinkingLevel};
//!
//! let mut model = Model::openai_compatible("http://127.0.0.1:1/v1", "m");
//! assert_eq!(supported_thinking_levels(&model), [ThinkingLevel::Off]);
//! model.reasoning = true;
//! assert_eq!(clamp_thinking_level(&model, ThinkingLevel::Xhigh), ThinkingLevel::High);
//! ```

use serde::{Deserialize, Serialize};

use super::model::Model;

/// How much a model reasons: pi's `ModelThinkingLevel`, `off` through `max`, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    Off,
    /// Minimal.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high, where the model lists it.
    Xhigh,
    /// The most the model does, where it lists it.
    Max,
}

impl ThinkingLevel {
    /// Every level, from `off` to `max`.
    pub const ALL: [ThinkingLevel; 7] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
        Self::Max,
    ];

    /// pi's name (`off`, `minimal`, …, `max`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }

    /// The level named `name`, `None` for any other text.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The levels `model` takes, lowest first (pi's `getSupportedThinkingLevels`): only `off` for a
/// model without reasoning; else every level its `thinking_level_map` does not mark `null`,
/// where `xhigh` and `max` must also be listed with a value.
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = model
                .thinking_level_map
                .as_ref()
                .and_then(|m| m.get(level.as_str()));
            match mapped {
                Some(None) => false,
                Some(Some(_)) => true,
                None => !matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max),
            }
        })
        .collect()
}

/// `level` if `model` takes it, else the nearest level above it that the model takes, else the
/// nearest below (pi's `clampThinkingLevel`).
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let supported = supported_thinking_levels(model);
    let above = ThinkingLevel::ALL
        .into_iter()
        .filter(|l| *l >= level)
        .find(|l| supported.contains(l));
    let below = ThinkingLevel::ALL
        .into_iter()
        .rev()
        .filter(|l| *l < level)
        .find(|l| supported.contains(l));
    above
        .or(below)
        .or_else(|| supported.first().copied())
        .unwrap_or(ThinkingLevel::Off)
}

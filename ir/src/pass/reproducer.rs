//! Crash reproducers in MLIR's format: the input IR followed by
//! `{-# external_resources: { mlir_reproducer: { pipeline: "...", ... } } #-}`.

use crate::attributes::Attribute;

/// The pipeline configuration stored in a reproducer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReproducerConfig {
    /// The full pipeline text.
    pub pipeline: String,
    /// Whether threading was disabled.
    pub disable_threading: bool,
    /// Whether verification ran after each pass.
    pub verify_each: bool,
}

/// Writes a reproducer: `ir` (the input module text) plus the configuration.
pub fn write_reproducer(
    path: &std::path::Path,
    ir: &str,
    config: &ReproducerConfig,
) -> std::io::Result<()> {
    let mut text = ir.trim_end().to_string();
    let mut pipeline = String::new();
    crate::printer::write_escaped_string(&mut pipeline, &config.pipeline);
    text.push_str(&format!(
        "\n\n{{-#\n  external_resources: {{\n    mlir_reproducer: {{\n      pipeline: {pipeline},\n      disable_threading: {},\n      verify_each: {}\n    }}\n  }}\n#-}}\n",
        config.disable_threading, config.verify_each
    ));
    std::fs::write(path, text)
}

/// Extracts the reproducer configuration from parsed `external_resources`.
pub fn parse_reproducer_config(
    external: &[(String, String, Attribute)],
) -> Option<ReproducerConfig> {
    let get = |k: &str| {
        external
            .iter()
            .find(|(g, key, _)| g == "mlir_reproducer" && key == k)
            .map(|(_, _, v)| v.clone())
    };
    let pipeline = get("pipeline")?.as_str()?.to_string();
    let flag = |k: &str| get(k).and_then(|a| a.as_int()).is_some_and(|v| v != 0);
    Some(ReproducerConfig {
        pipeline,
        disable_threading: flag("disable_threading"),
        verify_each: get("verify_each").is_none() || flag("verify_each"),
    })
}

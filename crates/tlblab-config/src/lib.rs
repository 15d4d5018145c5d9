//! Machine presets and configuration.

//! TODO(helper): see wire/mod.rs

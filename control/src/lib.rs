//! The dcirouter binary's library: configuration, control thread,
//! management socket, demo.
pub mod config;
pub mod ctl;
pub mod demo;
pub mod display;
pub mod router;
pub mod gen;
pub mod isis;
pub mod fann_agent;
pub mod metrics;

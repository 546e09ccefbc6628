//! dcirouter: a DPDK software router that keeps RoCEv2 traffic lossless
//! across DCI and SRv6 WANs.
//!
//! Usage follows the DPDK convention: `dcirouter [EAL args] -- COMMAND ...`.
//! Without `--`, all arguments are dcirouter's and the EAL arguments come from
//! the configuration's `[eal] args`.

use clap::{Parser, Subcommand};
use control::{config, ctl, demo, router};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(name = "dcirouter", version, about = "DPDK router for lossless RoCEv2 across DCI and SRv6 WANs",
    after_help = "EAL arguments go before `--`: dcirouter -l 0-2 -a 0000:3b:00.0 -- run --config configs/dci-router.toml")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// `--duration`: a finite number of seconds, 0 or more, that a
/// `Duration` holds (`nan`, `inf`, `-1`, `1e30` are refused by name, not
/// a panic).
fn seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s.trim().parse().map_err(|_| "not a number of seconds".to_string())?;
    Duration::try_from_secs_f64(v).map_err(|_| "a finite number of seconds >= 0 is required".to_string())
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run the router.
    Run {
        /// Configuration file (TOML).
        #[arg(short, long)]
        config: String,
        /// Stop when no packet arrived for this many milliseconds (pcap replays, tests).
        #[arg(long)]
        exit_when_idle: Option<u64>,
        /// Stop after this many seconds.
        #[arg(long, value_parser = seconds)]
        duration: Option<Duration>,
        /// Management socket (see `dcirouter ctl`).
        #[arg(long)]
        ctl_socket: Option<String>,
    },
    /// Validate a configuration file and exit.
    CheckConfig { config: String },
    /// Print the IS-IS TLVs (SRv6 Capabilities with the C-flag, End SIDs for
    /// END.C / END.E) for an external IGP speaker, in hex and decoded.
    Isis {
        #[arg(short, long)]
        config: String,
    },
    /// Run the embedded demo on net_pcap virtual devices.
    Demo {
        /// Where to write the demo's pcaps and configuration.
        #[arg(long, default_value = "demo-out")]
        out: String,
    },
    /// Send a command to a running router's management socket.
    Ctl {
        #[arg(long)]
        socket: String,
        /// e.g. `route add 10.9.0.0/16 via 10.0.2.2`, `show counters`
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let (eal, mut app): (Vec<String>, Vec<String>) = match argv.iter().position(|a| a == "--") {
        Some(i) => (argv[1..i].to_vec(), argv[i + 1..].to_vec()),
        None => (Vec::new(), argv[1..].to_vec()),
    };
    // `dcirouter [EAL] -- --config FILE` means `run`.
    if app.first().map(|a| a.starts_with("--config") || a == "-c").unwrap_or(false) {
        app.insert(0, "run".into());
    }
    app.insert(0, "dcirouter".into());
    let cli = Cli::parse_from(app);
    let code = match cli.cmd {
        Cmd::Run { config, exit_when_idle, duration, ctl_socket } => match config::load_file(&config) {
            Err(e) => {
                eprintln!("dcirouter: bad configuration: {e}");
                2
            }
            Ok(cfg) => {
                let opts = router::RunOptions {
                    exit_when_idle: exit_when_idle.map(Duration::from_millis),
                    duration,
                    ctl_socket,
                    quiet: false,
                };
                match router::run(cfg, &eal, &opts) {
                    Ok(_) => 0,
                    Err(e) => {
                        eprintln!("dcirouter: {e}");
                        1
                    }
                }
            }
        },
        Cmd::CheckConfig { config } => match config::load_file(&config) {
            Ok(c) => {
                println!("{config}: OK ({} ports, {} interfaces, {} routes, {} static neighbours)", c.ports.len(), c.interfaces.len(), c.fib.len(), c.neighbours.len());
                0
            }
            Err(e) => {
                eprintln!("dcirouter: bad configuration: {e}");
                2
            }
        },
        Cmd::Isis { config } => match config::load_file(&config).and_then(|c| control::isis::print(&c)) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("dcirouter isis: {e}");
                2
            }
        },
        Cmd::Demo { out } => match demo::run(std::path::Path::new(&out)) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("dcirouter demo: {e}");
                1
            }
        },
        Cmd::Ctl { socket, command } => match ctl::request(&socket, &command.join(" ")) {
            Ok(r) => {
                print!("{r}");
                if r.starts_with("ERR") { 1 } else { 0 }
            }
            Err(e) => {
                eprintln!("dcirouter ctl: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}

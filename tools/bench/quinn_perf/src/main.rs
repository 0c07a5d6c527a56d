//! quinn_perf: a perf-protocol client and server on quinn 0.9, the second
//! peer of dpquic's goodput benchmark (tools/bench). Each side runs on one
//! thread, as the benchmark pins each process to one CPU.

mod client;
mod config;
mod pattern;
mod server;

use std::net::SocketAddr;
use std::process::exit;
use std::time::Duration;

const USAGE: &str = "\
usage: quinn_perf server --listen=HOST:PORT --cert=PEM --key=PEM [flags]
       quinn_perf client --connect=HOST:PORT --size=BYTES --ca=PEM [flags]

A perf-protocol (ALPN \"perf\") server or client on quinn 0.9. The server
answers each bidirectional stream's 8-byte big-endian size with that many
pattern bytes (dpquic's synthetic body) until it is killed; it prints
\"quinn_perf: listening on HOST:PORT\" once ready. The client downloads
--size bytes over one connection, checks every byte, prints one line
JSON {\"bytes\":...,\"seconds\":...,\"handshake_seconds\":...,\"gbps\":...}
and exits 0, or prints why and exits 1.

  --max-udp-payload=N  UDP payload of every packet, 1200..1452 (default 1452)
  --window=BYTES       stream receive window and send window (default 16777216)
  --sni=NAME           client: server name to verify (default localhost)
  --timeout=SECONDS    client: give up after this long (default 60)
  --help               this text
";

struct Options {
    server: bool,
    addr: Option<SocketAddr>,
    cert: Option<String>,
    key: Option<String>,
    ca: Option<String>,
    size: Option<u64>,
    payload: u16,
    window: u64,
    sni: String,
    timeout: u64,
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{}={}: not a number", flag, value))
}

fn parse_flag(o: &mut Options, arg: &str) -> Result<(), String> {
    let (flag, value) = arg
        .split_once('=')
        .ok_or_else(|| format!("{}: expected --flag=value", arg))?;
    let addr = |v: &str| {
        v.parse::<SocketAddr>()
            .map_err(|_| format!("{}={}: not HOST:PORT", flag, v))
    };
    match flag {
        "--listen" if o.server => o.addr = Some(addr(value)?),
        "--connect" if !o.server => o.addr = Some(addr(value)?),
        "--cert" if o.server => o.cert = Some(value.to_string()),
        "--key" if o.server => o.key = Some(value.to_string()),
        "--ca" if !o.server => o.ca = Some(value.to_string()),
        "--size" if !o.server => o.size = Some(number(flag, value)?),
        "--sni" if !o.server => o.sni = value.to_string(),
        "--timeout" if !o.server => o.timeout = number(flag, value)?,
        "--max-udp-payload" => o.payload = number(flag, value)?,
        "--window" => o.window = number(flag, value)?,
        _ => {
            return Err(format!(
                "{}: unknown flag for {}",
                flag,
                if o.server { "server" } else { "client" }
            ))
        }
    }
    Ok(())
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mode = args.first().ok_or("expected \"server\" or \"client\"")?;
    let server = match mode.as_str() {
        "server" => true,
        "client" => false,
        other => return Err(format!("{}: expected \"server\" or \"client\"", other)),
    };
    let mut o = Options {
        server,
        addr: None,
        cert: None,
        key: None,
        ca: None,
        size: None,
        payload: 1452,
        window: 16 << 20,
        sni: "localhost".into(),
        timeout: 60,
    };
    for arg in &args[1..] {
        parse_flag(&mut o, arg)?;
    }
    if !(1200..=1452).contains(&o.payload) {
        return Err(format!(
            "--max-udp-payload={}: must be 1200..1452",
            o.payload
        ));
    }
    if o.window == 0 || o.timeout == 0 {
        return Err("--window and --timeout must be positive".into());
    }
    let missing = if server {
        [
            ("--listen", o.addr.is_none()),
            ("--cert", o.cert.is_none()),
            ("--key", o.key.is_none()),
        ]
    } else {
        [
            ("--connect", o.addr.is_none()),
            ("--size", o.size.is_none()),
            ("--ca", o.ca.is_none()),
        ]
    };
    if let Some((flag, _)) = missing.iter().find(|(_, absent)| *absent) {
        return Err(format!("{} is required", flag));
    }
    Ok(o)
}

fn run_server(o: &Options, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
    let transport = config::transport(o.payload, o.window)?;
    let config = config::server(
        o.cert.as_deref().unwrap(),
        o.key.as_deref().unwrap(),
        transport,
    )?;
    let addr = o.addr.unwrap();
    let endpoint = runtime
        .block_on(async { quinn::Endpoint::server(config, addr) })
        .map_err(|e| format!("bind {}: {}", addr, e))?;
    println!(
        "quinn_perf: listening on {}",
        endpoint.local_addr().map_err(|e| e.to_string())?
    );
    runtime.block_on(server::serve(endpoint));
    Ok(())
}

fn run_client(o: &Options, runtime: &tokio::runtime::Runtime) -> Result<(), String> {
    let transport = config::transport(o.payload, o.window)?;
    let config = config::client(o.ca.as_deref().unwrap(), transport)?;
    let download = client::download(o.addr.unwrap(), &o.sni, config, o.size.unwrap());
    let outcome = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(o.timeout), download).await })
        .map_err(|_| format!("no complete response within {} s", o.timeout))??;
    println!(
        "JSON {{\"bytes\":{},\"seconds\":{:.6},\"handshake_seconds\":{:.6},\"gbps\":{:.4}}}",
        outcome.bytes,
        outcome.seconds,
        outcome.handshake_seconds,
        outcome.bytes as f64 * 8.0 / outcome.seconds / 1e9
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", USAGE);
        return;
    }
    let options = parse(&args).unwrap_or_else(|e| {
        eprintln!("quinn_perf: {} (see --help)", e);
        exit(2)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("quinn_perf: tokio runtime: {}", e);
            exit(1)
        });
    let result = if options.server {
        run_server(&options, &runtime)
    } else {
        run_client(&options, &runtime)
    };
    if let Err(e) = result {
        eprintln!("quinn_perf: {}", e);
        exit(1);
    }
}

//! The real servers of the L7 profile, started in the server namespace from Debian's packages:
//! `nginx` (HTTP, small and large objects), `vsftpd` (FTP, anonymous, passive mode on ports
//! [`PASV_PORTS`]) and `dnsmasq` (authoritative answers for [`super::DNS_NAME`]). Their configs,
//! content and logs live in `<run dir>/l7/`; every one runs in the foreground under a
//! [`ChildGuard`] pinned to the CPU given (the tester's), so the testbed's teardown ends them.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::netns::Netns;
use crate::placement::PlacedProcess;
use crate::process::{ChildGuard, ProcessSpec};

use super::{Sizes, DNS_NAME, FTP_FILE, HTTP_LARGE, HTTP_SMALL};

/// vsftpd's passive-mode data ports (fixed, so a firewall in the chain can allow them).
pub const PASV_PORTS: (u16, u16) = (30000, 30099);

/// The Debian package of each server program.
const PROGRAMS: [(&str, &str); 3] = [
    ("/usr/sbin/nginx", "nginx"),
    ("/usr/sbin/vsftpd", "vsftpd"),
    ("/usr/sbin/dnsmasq", "dnsmasq-base"),
];

/// The running servers.
#[derive(Debug)]
pub struct Servers {
    children: Vec<ChildGuard>,
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        what: "writing",
        path: path.to_path_buf(),
        source,
    })
}

fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        what: "creating directory",
        path: path.to_path_buf(),
        source,
    })
}

/// `n` bytes of a fixed pattern (content is not what is measured; its size is).
fn content(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

impl Servers {
    /// Writes the content and configs under `dir` and starts the three servers in `ns`, listening
    /// on `addrs` (the server's IPv4 and, if given, IPv6 address); returns once each answers.
    pub fn start(
        ns: &Netns,
        dir: &Path,
        addrs: &[IpAddr],
        sizes: &Sizes,
        cpu: usize,
    ) -> Result<Servers> {
        for (prog, pkg) in PROGRAMS {
            if !Path::new(prog).is_file() {
                return Err(Error::Unsupported {
                    dut: "l7 profile".into(),
                    what: "this machine".into(),
                    why: format!("{prog} not found; install the Debian package {pkg} (make setup)"),
                });
            }
        }
        mkdir(dir)?;
        let www = dir.join("www");
        let ftp = dir.join("ftp");
        let empty = dir.join("empty");
        for d in [&www, &ftp, &empty] {
            mkdir(d)?;
        }
        // vsftpd refuses an anonymous root or chroot dir that the FTP user could write, and its
        // anonymous user (`ftp`, made by the package) must read the file: world-readable, root-owned.
        for d in [dir, &www, &ftp, &empty] {
            set_mode(d, 0o755)?;
        }
        write(&www.join(HTTP_SMALL), &content(sizes.http_small))?;
        write(&www.join(HTTP_LARGE), &content(sizes.http_large))?;
        write(&ftp.join(FTP_FILE), &content(sizes.ftp))?;
        for f in [
            www.join(HTTP_SMALL),
            www.join(HTTP_LARGE),
            ftp.join(FTP_FILE),
        ] {
            set_mode(&f, 0o644)?;
        }
        let has_v6 = addrs.iter().any(IpAddr::is_ipv6);
        let d = |p: &str| dir.join(p).display().to_string();

        let nginx_conf = format!(
            "# written by vecswitch-testbed (l7)\n\
             daemon off;\nmaster_process on;\nworker_processes 1;\nuser root root;\n\
             pid {pid};\nerror_log {err} warn;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_timeout 0;\n\
             \x20 default_type application/octet-stream;\n\
             \x20 client_body_temp_path {tmp}/body;\n  proxy_temp_path {tmp}/proxy;\n\
             \x20 fastcgi_temp_path {tmp}/fastcgi;\n  uwsgi_temp_path {tmp}/uwsgi;\n\
             \x20 scgi_temp_path {tmp}/scgi;\n\
             \x20 server {{\n    listen 80;\n{v6}    root {www};\n  }}\n}}\n",
            pid = d("nginx.pid"),
            err = d("nginx-error.log"),
            tmp = d("nginx-tmp"),
            www = www.display(),
            v6 = if has_v6 { "    listen [::]:80;\n" } else { "" },
        );
        mkdir(&dir.join("nginx-tmp"))?;
        let nginx_path = dir.join("nginx.conf");
        write(&nginx_path, nginx_conf.as_bytes())?;

        // vsftpd: `listen_ipv6=YES` is one dual-stack socket; `listen=YES` IPv4 only.
        let vsftpd_conf = format!(
            "listen={}\nlisten_ipv6={}\nbackground=NO\nanonymous_enable=YES\nno_anon_password=YES\n\
             anon_root={ftp}\nftp_username=ftp\nlocal_enable=NO\nwrite_enable=NO\n\
             pasv_enable=YES\npasv_min_port={}\npasv_max_port={}\nconnect_from_port_20=NO\n\
             secure_chroot_dir={empty}\nseccomp_sandbox=NO\nisolate=NO\nisolate_network=NO\n\
             xferlog_enable=NO\nvsftpd_log_file={log}\nmax_clients=0\nmax_per_ip=0\n\
             use_localtime=NO\n",
            if has_v6 { "NO" } else { "YES" },
            if has_v6 { "YES" } else { "NO" },
            PASV_PORTS.0,
            PASV_PORTS.1,
            ftp = ftp.display(),
            empty = empty.display(),
            log = d("vsftpd-xfer.log"),
        );
        let vsftpd_path = dir.join("vsftpd.conf");
        write(&vsftpd_path, vsftpd_conf.as_bytes())?;

        // dnsmasq: no upstream, no /etc/hosts, authoritative-style local answers for DNS_NAME.
        let mut dnsmasq = vec![
            "--keep-in-foreground".to_string(),
            "--conf-file=/dev/null".into(),
            "--no-resolv".into(),
            "--no-hosts".into(),
            "--bind-interfaces".into(),
            "--user=root".into(),
            "--group=root".into(),
            format!("--pid-file={}", d("dnsmasq.pid")),
            format!("--log-facility={}", d("dnsmasq-queries.log")),
            "--cache-size=0".into(),
            format!("--host-record={DNS_NAME},10.12.9.1,fd12:9::1"),
        ];
        for a in addrs {
            dnsmasq.push(format!("--listen-address={a}"));
        }

        let cpus = Some(vec![cpu]);
        let mut servers = Servers {
            children: Vec::new(),
        };
        let specs = [
            ProcessSpec::new("l7-nginx", "/usr/sbin/nginx").args([
                "-e".to_string(),
                d("nginx-error.log"),
                "-p".into(),
                dir.display().to_string(),
                "-c".into(),
                nginx_path.display().to_string(),
            ]),
            ProcessSpec::new("l7-vsftpd", "/usr/sbin/vsftpd")
                .arg(vsftpd_path.display().to_string()),
            ProcessSpec::new("l7-dnsmasq", "/usr/sbin/dnsmasq").args(dnsmasq),
        ];
        for spec in specs {
            let spec = spec.netns(Some(ns.name())).cpus(cpus.clone());
            servers.children.push(ChildGuard::spawn(&spec, dir)?);
        }
        // Ready when each answers on every address (dnsmasq: its TCP port 53).
        for a in addrs {
            for (port, who) in [(80, 0), (21, 1), (53, 2)] {
                let sa = SocketAddr::new(*a, port);
                let r = crate::wait_for(
                    &format!("l7 server {sa} in {}", ns.name()),
                    Duration::from_secs(15),
                    || {
                        ns.run_in(move || {
                            TcpStream::connect_timeout(&sa, Duration::from_millis(200)).is_ok()
                        })
                        .unwrap_or(false)
                    },
                );
                if let Err(e) = r {
                    let c = &mut servers.children[who];
                    let alive = c
                        .check_alive()
                        .err()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default();
                    return Err(Error::Invalid {
                        field: "l7 server",
                        value: format!("{}{alive}: {e}; log: {}", c.name(), c.log().trim()),
                        expected:
                            "a server that listens (see its log and config in the run directory)"
                                .into(),
                    });
                }
            }
        }
        Ok(servers)
    }

    /// Fails if a server exited.
    pub fn check_alive(&mut self) -> Result<()> {
        for c in &mut self.children {
            c.check_alive()?;
        }
        Ok(())
    }

    /// Placement records of the servers (role `l7-server`).
    pub fn placed(&self) -> Vec<PlacedProcess> {
        self.children
            .iter()
            .map(|c| PlacedProcess {
                role: "l7-server".into(),
                name: c.name().to_string(),
                pid: c.pid(),
                cpus: c.cpus_allowed(),
                note: String::new(),
            })
            .collect()
    }
}

fn set_mode(p: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(|source| Error::Io {
        what: "setting permissions of",
        path: PathBuf::from(p),
        source,
    })
}

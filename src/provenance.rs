//! Where a result was produced: facts about this machine that [`crate::db::Producer`] records.

/// The name of this machine, for [`crate::db::Producer::host`]: the kernel's host name
/// (`/proc/sys/kernel/hostname`), else `$HOSTNAME`, else `/etc/hostname`, else `"unknown"`.
pub fn this_host() -> String {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    read("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| read("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_host_is_never_empty() {
        let host = super::this_host();
        assert!(!host.is_empty());
        assert_eq!(host, host.trim());
    }
}

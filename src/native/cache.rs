//! The on-disk cache of compiled code objects, shared by both native runtimes (hiprtc and
//! NVRTC output), so that a second process does not pay the compile.
//!
//! Directory: `$RWO_KERNEL_CACHE` (`off` disables the cache), else
//! `$XDG_CACHE_HOME/rocm-wgpu-ops`, else `$HOME/.cache/rocm-wgpu-ops` (`%LOCALAPPDATA%` on
//! Windows). One file per [`Key`]: a header holding the whole key text, the length and a
//! checksum of the code object, then the code object. A file that does not hold exactly its
//! key and an intact payload is ignored (and replaced by the next compile). Writers write a
//! temporary file and rename it into place, so concurrent processes never see half a file. A
//! cache that cannot be read or written is not an error: the code is compiled again.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a compiled code object depends on: equal keys give interchangeable code objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    /// Every input, one per line (the sources by their hash).
    text: String,
    /// The file name: readable parts, then a hash of `text`.
    file: String,
}

impl Key {
    /// The key of `sources` (the family's file and the headers it includes) compiled by
    /// `compiler` (its name and version) with `options` for `arch`, on `runtime`.
    pub fn new(runtime: &str, family: &str, arch: &str, compiler: &str, options: &[&str], sources: &[&str]) -> Key {
        let mut source_hash = Fnv::default();
        for s in sources {
            source_hash.write(&(s.len() as u64).to_le_bytes());
            source_hash.write(s.as_bytes());
        }
        let text = format!(
            "rocm-wgpu-ops kernel cache 1\nruntime {runtime}\nfamily {family}\narch {arch}\ncompiler {compiler}\n\
             options {}\nsources {:032x}\n",
            options.join(" "),
            source_hash.finish()
        );
        let mut h = Fnv::default();
        h.write(text.as_bytes());
        let safe: String =
            arch.chars().map(|c| if c.is_ascii_alphanumeric() || "+-._".contains(c) { c } else { '_' }).collect();
        let file = format!("{runtime}-{family}-{safe}-{:016x}.co", h.finish() as u64);
        Key { text, file }
    }
}

/// FNV-1a, 128 bits: stable across processes and toolchains (std's hasher promises neither).
struct Fnv(u128);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0x6c62_272e_07bb_0142_62b8_2175_6295_c58d)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u128).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
        }
    }
    fn finish(&self) -> u128 {
        self.0
    }
}

const MAGIC: &[u8; 8] = b"RWOKC\x001\0";

/// The checksum of a payload.
fn checksum(payload: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(payload);
    h.finish() as u64
}

/// A cache directory, or none (then every lookup misses and stores do nothing).
#[derive(Clone, Debug)]
pub(crate) struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// The cache the environment names (see the module docs).
    pub fn from_env() -> Cache {
        Cache::from_vars(|name| std::env::var_os(name))
    }

    /// The cache that environment variables read by `var` name.
    fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Cache {
        let var = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = match var("RWO_KERNEL_CACHE") {
            Some(p) if p.as_os_str() == "off" => None,
            Some(p) => Some(p),
            None => var("XDG_CACHE_HOME")
                .or_else(|| var("HOME").map(|h| h.join(".cache")))
                .or_else(|| var("LOCALAPPDATA"))
                .map(|d| d.join("rocm-wgpu-ops")),
        };
        Cache { dir }
    }

    /// No cache (`RWO_KERNEL_CACHE=off`).
    #[cfg(test)]
    pub fn off() -> Cache {
        Cache { dir: None }
    }

    /// A cache in `dir`.
    #[cfg(test)]
    pub fn at(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: Some(dir.into()) }
    }

    /// The directory, if there is one.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    fn path(&self, key: &Key) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(&key.file))
    }

    /// The code object stored for `key`, if an intact one is there.
    pub fn get(&self, key: &Key) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(key)?).ok()?;
        parse(&bytes, key)
    }

    /// Stores `payload` for `key`; failures leave the cache as it was.
    pub fn put(&self, key: &Key, payload: &[u8]) {
        let (Some(dir), Some(path)) = (&self.dir, self.path(key)) else { return };
        let _ = write_atomically(dir, &path, &encode(key, payload));
    }

    /// The stored code object for `key`, else `compile`'s, stored for next time.
    #[cfg_attr(not(any(feature = "rocm", feature = "cuda")), allow(dead_code))]
    pub fn get_or_compile<E>(&self, key: &Key, compile: impl FnOnce() -> Result<Vec<u8>, E>) -> Result<Vec<u8>, E> {
        if let Some(hit) = self.get(key) {
            return Ok(hit);
        }
        let code = compile()?;
        self.put(key, &code);
        Ok(code)
    }
}

/// Where compiled code objects are kept, for `Device::info`.
impl std::fmt::Display for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.dir {
            Some(d) => write!(f, "{}", d.display()),
            None => f.write_str("nowhere (RWO_KERNEL_CACHE=off, or no home directory)"),
        }
    }
}

fn encode(key: &Key, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + key.text.len() + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.text.len() as u64).to_le_bytes());
    out.extend_from_slice(key.text.as_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a file, if it is whole and holds exactly `key`.
fn parse(bytes: &[u8], key: &Key) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (n, rest) = take_u64(rest)?;
    let (text, rest) = rest.split_at_checked(usize::try_from(n).ok()?)?;
    if text != key.text.as_bytes() {
        return None;
    }
    let (len, rest) = take_u64(rest)?;
    let (sum, payload) = take_u64(rest)?;
    (payload.len() as u64 == len && checksum(payload) == sum).then(|| payload.to_vec())
}

fn take_u64(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*head), rest))
}

/// Writes `contents` to a fresh temporary file in `dir`, then renames it to `path`: a reader
/// sees the old file or the new one, never a part (rename replaces atomically).
fn write_atomically(dir: &Path, path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let written = std::fs::write(&tmp, contents).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            use std::sync::atomic::{AtomicU64, Ordering};
            static N: AtomicU64 = AtomicU64::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            TempDir(std::env::temp_dir().join(format!("rwo-cache-test-{tag}-{}-{n}", std::process::id())))
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn key() -> Key {
        Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O3"], &["src", "hdr"])
    }

    #[test]
    fn the_directory_comes_from_the_environment() {
        fn env(vars: &[(&str, &str)]) -> Option<String> {
            let cache = Cache::from_vars(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| OsString::from(v)));
            cache.dir.map(|d| d.display().to_string())
        }
        let all = [("RWO_KERNEL_CACHE", "/k"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h"), ("LOCALAPPDATA", "/l")];
        assert_eq!(env(&all).as_deref(), Some("/k"));
        assert_eq!(env(&all[1..]).as_deref(), Some("/x/rocm-wgpu-ops"));
        assert_eq!(env(&all[2..]).as_deref(), Some("/h/.cache/rocm-wgpu-ops"));
        assert_eq!(env(&all[3..]).as_deref(), Some("/l/rocm-wgpu-ops"));
        assert_eq!(env(&[("RWO_KERNEL_CACHE", "off"), ("HOME", "/h")]), None);
        assert_eq!(
            env(&[("RWO_KERNEL_CACHE", ""), ("XDG_CACHE_HOME", ""), ("HOME", "/h")]).as_deref(),
            Some("/h/.cache/rocm-wgpu-ops")
        );
        assert_eq!(env(&[]), None);
    }

    #[test]
    fn every_input_changes_the_key() {
        let base = key();
        let variants = [
            Key::new("cuda", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O3"], &["src", "hdr"]),
            Key::new("rocm", "sort", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O3"], &["src", "hdr"]),
            Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack+", "HIP 6.2.41133", &["-O3"], &["src", "hdr"]),
            Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41134", &["-O3"], &["src", "hdr"]),
            Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O2"], &["src", "hdr"]),
            Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O3"], &["src!", "hdr"]),
            // The sources are hashed with their lengths: moving text between them is a change.
            Key::new("rocm", "reduce", "gfx90a:sramecc+:xnack-", "HIP 6.2.41133", &["-O3"], &["srch", "dr"]),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(v.text, base.text, "variant {i}");
            assert_ne!(v.file, base.file, "variant {i}");
        }
        assert_eq!(key(), base);
        assert!(base.file.starts_with("rocm-reduce-gfx90a_sramecc+_xnack--"), "{}", base.file);
    }

    #[test]
    fn a_stored_code_object_is_found_by_its_key_only() {
        let dir = TempDir::new("roundtrip");
        let cache = Cache::at(&dir.0);
        let (k, other) = (key(), Key::new("rocm", "sort", "gfx1030", "HIP 6.2.41133", &[], &["src"]));
        assert_eq!(cache.get(&k), None);
        cache.put(&k, b"\x7fELF code");
        assert_eq!(cache.get(&k).as_deref(), Some(&b"\x7fELF code"[..]));
        assert_eq!(cache.get(&other), None);
        // A file holding another key under this key's name (a hash collision) is not used.
        std::fs::copy(dir.0.join(&k.file), dir.0.join(&other.file)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cache.get(&other), None);
        let mut compiled = 0;
        let mut compile = || {
            compiled += 1;
            Ok::<_, ()>(b"sort code".to_vec())
        };
        assert_eq!(cache.get_or_compile(&other, &mut compile), Ok(b"sort code".to_vec()));
        assert_eq!(cache.get_or_compile(&other, &mut compile), Ok(b"sort code".to_vec()));
        assert_eq!(compiled, 1, "the second lookup compiled again");
        let none = Cache { dir: None };
        none.put(&k, b"x");
        assert_eq!(none.get(&k), None);
    }

    #[test]
    fn short_or_corrupt_files_are_ignored_and_replaced() {
        let dir = TempDir::new("corrupt");
        let cache = Cache::at(&dir.0);
        let k = key();
        cache.put(&k, &[7u8; 1000]);
        let path = dir.0.join(&k.file);
        let whole = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
        for cut in [0, 5, 8, 16, whole.len() / 2, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(cache.get(&k), None, "a file cut at {cut} bytes");
        }
        let mut longer = whole.clone();
        longer.push(0);
        let mut flipped = whole.clone();
        if let Some(b) = flipped.last_mut() {
            *b ^= 1;
        }
        for bad in [longer, flipped] {
            std::fs::write(&path, &bad).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(cache.get(&k), None);
        }
        let fresh = cache.get_or_compile(&k, || Ok::<_, ()>(vec![9u8; 10]));
        assert_eq!(fresh, Ok(vec![9u8; 10]));
        assert_eq!(cache.get(&k), Some(vec![9u8; 10]));
    }

    #[test]
    fn concurrent_writers_never_expose_a_partial_file() {
        let dir = TempDir::new("concurrent");
        let k = key();
        // Payloads of different lengths and contents, so a torn file cannot pass for one.
        let payload = |t: usize, i: usize| vec![(t * 31 + i) as u8; 1000 + 4096 * ((t + i) % 5)];
        std::thread::scope(|s| {
            for t in 0..6 {
                let (dir, k) = (&dir.0, &k);
                s.spawn(move || {
                    // Each thread has its own handle, as separate processes would.
                    let cache = Cache::at(dir);
                    for i in 0..40 {
                        cache.put(k, &payload(t, i));
                        if let Some(got) = cache.get(k) {
                            let whole = (0..6).any(|t| (0..40).any(|i| got == payload(t, i)));
                            assert!(whole, "a read returned {} bytes that no writer wrote", got.len());
                        }
                    }
                });
            }
        });
        assert!(Cache::at(&dir.0).get(&k).is_some());
        let leftovers = std::fs::read_dir(&dir.0).map(|d| d.count()).unwrap_or(0);
        assert_eq!(leftovers, 1, "temporary files left behind");
    }

    #[test]
    fn an_unwritable_directory_is_not_an_error() {
        let dir = TempDir::new("unwritable");
        std::fs::write(&dir.0, b"a file where the directory should be").unwrap_or_else(|e| panic!("{e}"));
        let cache = Cache::at(dir.0.join("sub"));
        let k = key();
        cache.put(&k, b"code");
        assert_eq!(cache.get(&k), None);
        assert_eq!(cache.get_or_compile(&k, || Ok::<_, ()>(b"code".to_vec())), Ok(b"code".to_vec()));
        let _ = std::fs::remove_file(&dir.0);
    }
}

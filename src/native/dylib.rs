//! Vendor libraries opened at run time, so that a binary built with a native feature starts
//! where the vendor stack is absent: [`open`] finds a library by its candidate names (or the
//! path an environment variable gives), and [`dylib!`] declares a table of entry points
//! resolved from it once. A missing library or symbol is a one-line reason, never a failure to
//! start. The HIP runtime and hiprtc (`hip_api.rs`), rocBLAS (`blas/rocm.rs`) and MIOpen
//! (`dnn/rocm.rs`) load this way, each with its own table and override variable.

use libloading::Library;
use std::sync::Arc;

/// A library that loaded, and the name it was found by.
pub(crate) struct Opened {
    pub lib: Arc<Library>,
    pub name: String,
}

/// Opens the first of `candidates` that loads, or the one library `$env_var` names (a path or a
/// soname) when it is set. The error says what was tried, and why a library that exists failed
/// to load (e.g. a dependency of it is missing).
pub(crate) fn open(what: &str, env_var: &str, candidates: &[String]) -> Result<Opened, String> {
    let forced = std::env::var(env_var).ok().filter(|v| !v.trim().is_empty());
    let names: Vec<String> = match &forced {
        Some(v) => vec![v.trim().to_string()],
        None => candidates.to_vec(),
    };
    let mut broken = None;
    for name in &names {
        // SAFETY: opening runs the library's initialisers; the vendor libraries named here are
        // made to be loaded into any process, and nothing else is opened.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok(Opened { lib: Arc::new(lib), name: name.clone() }),
            // glibc's text for a file that is not there begins with the name asked for; any
            // other failure (a missing dependency, a wrong architecture) is worth reporting.
            Err(e) => {
                let text = e.to_string();
                let absent = text.contains(&format!("{name}: cannot open shared object file"));
                if !absent && broken.is_none() {
                    broken = Some(format!("{name} failed to load: {text}"));
                }
            }
        }
    }
    if let Some(why) = broken {
        return Err(why);
    }
    let hint = match forced {
        Some(_) => format!("named by {env_var}"),
        None => format!("set {env_var} to its path"),
    };
    Err(format!("{what} not found (tried {}; {hint})", names.join(", ")))
}

/// The names to try for a library of `sonames` (best first): each in `first` (the directory of
/// the HIP runtime this process loaded), then by soname through the loader's search path, then
/// in each of `dirs` (where ROCm installs), every name once. Versioned names only where the
/// caller gives no other: a ROCm 7 wheel ships `libamdhip64.so.7` without `libamdhip64.so`.
#[cfg(any(test, feature = "rocm"))]
pub(crate) fn candidates(first: Option<&str>, sonames: &[String], dirs: &[String]) -> Vec<String> {
    let mut all: Vec<String> = vec![];
    let mut add = |name: String| {
        if !all.contains(&name) {
            all.push(name);
        }
    };
    let in_dir = |dir: &str, name: &str| format!("{}/{name}", dir.trim_end_matches('/'));
    first.iter().flat_map(|d| sonames.iter().map(|n| in_dir(d, n))).for_each(&mut add);
    sonames.iter().cloned().for_each(&mut add);
    dirs.iter().flat_map(|d| sonames.iter().map(|n| in_dir(d, n))).for_each(&mut add);
    all
}

/// The path of the loaded object that holds `addr` (a resolved symbol), as the loader recorded
/// it when opening it: where a library found by soname came from.
#[cfg(all(unix, any(test, feature = "rocm")))]
pub(crate) fn path_of(addr: *const std::ffi::c_void) -> Option<String> {
    // SAFETY: all-zero bytes are a valid `Dl_info` (null pointers).
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads `addr` as an address and writes `info`.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success dli_fname is the loader's NUL-terminated name of the object.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    (!name.is_empty()).then_some(name)
}

/// Elsewhere the loader records no path to ask for.
#[cfg(all(not(unix), any(test, feature = "rocm")))]
pub(crate) fn path_of(_addr: *const std::ffi::c_void) -> Option<String> {
    None
}

/// Whether an object of soname (or path) `name` is loaded in this process now; loads nothing.
#[cfg(all(unix, any(test, feature = "rocm")))]
pub(crate) fn loaded(name: &str) -> bool {
    // SAFETY: with RTLD_NOLOAD dlopen only looks among the loaded objects: no initialiser runs.
    unsafe { libloading::os::unix::Library::open(Some(name), libc::RTLD_LAZY | libc::RTLD_NOLOAD) }.is_ok()
}

/// Elsewhere nothing is asked: no object is reported loaded.
#[cfg(all(not(unix), any(test, feature = "rocm")))]
pub(crate) fn loaded(_name: &str) -> bool {
    false
}

/// Declares a table of C entry points resolved from one library:
///
/// ```ignore
/// dylib! {
///     /// The calls we make.
///     pub(crate) struct Fns {
///         fn strlen(s: *const c_char) -> usize;
///     }
/// }
/// let fns = Fns::resolve(&opened.lib)?; // Err names the first missing symbol
/// let n = unsafe { (fns.strlen)(c"abc".as_ptr()) };
/// ```
///
/// Each field is the function pointer, named as the C symbol; the table keeps the library
/// loaded for as long as it lives.
macro_rules! dylib {
    ($(#[$meta:meta])* $vis:vis struct $name:ident {
        $(fn $f:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;)*
    }) => {
        $(#[$meta])*
        #[allow(non_snake_case)]
        $vis struct $name {
            $(pub $f: unsafe extern "C" fn($($arg: $ty),*) $(-> $ret)?,)*
            _lib: std::sync::Arc<libloading::Library>,
        }

        impl $name {
            /// Resolves every entry point in `lib`; the error names the first one missing.
            $vis fn resolve(lib: &std::sync::Arc<libloading::Library>) -> std::result::Result<Self, String> {
                Ok($name {
                    $($f: {
                        let name = concat!(stringify!($f), "\0").as_bytes();
                        // SAFETY: the type is the symbol's C signature, as declared above from
                        // the vendor's header; the pointer stays valid while `_lib` is loaded.
                        let symbol = unsafe { lib.get::<unsafe extern "C" fn($($ty),*) $(-> $ret)?>(name) };
                        *symbol.map_err(|_| format!("symbol {} missing", stringify!($f)))?
                    },)*
                    _lib: lib.clone(),
                })
            }
        }
    };
}
#[cfg(any(feature = "rocm", feature = "cuda"))]
pub(crate) use dylib;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::ffi::{c_char, c_int};

    dylib! {
        /// Two entry points of the C library, which every Linux process has.
        struct LibC {
            fn strlen(s: *const c_char) -> usize;
            fn abs(v: c_int) -> c_int;
        }
    }

    dylib! {
        /// Never built: resolving it fails.
        #[allow(dead_code)]
        struct Missing {
            fn strlen(s: *const c_char) -> usize;
            fn rwo_no_such_symbol(v: c_int) -> c_int;
        }
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_first_candidate_that_loads_is_opened_and_its_symbols_resolve() {
        let opened = open("libc", "RWO_TEST_NO_SUCH_VAR", &names(&["librwo-absent.so.9", "libc.so.6"]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(opened.name, "libc.so.6");
        let libc = LibC::resolve(&opened.lib).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: a NUL-terminated string and a plain int.
        let (n, a) = unsafe { ((libc.strlen)(c"four".as_ptr()), (libc.abs)(-7)) };
        assert_eq!((n, a), (4, 7));
        let missing = Missing::resolve(&opened.lib).err();
        assert_eq!(missing.as_deref(), Some("symbol rwo_no_such_symbol missing"));
    }

    #[test]
    fn an_absent_library_is_a_reason_naming_what_was_tried() {
        let err = open("libfoo", "RWO_TEST_NO_SUCH_VAR", &names(&["librwo-absent.so.1", "/nonexistent/librwo.so"]))
            .err()
            .unwrap_or_default();
        assert_eq!(
            err,
            "libfoo not found (tried librwo-absent.so.1, /nonexistent/librwo.so; set RWO_TEST_NO_SUCH_VAR to its path)"
        );
    }

    #[test]
    fn libraries_are_searched_beside_the_runtime_then_by_soname_then_in_rocm_dirs() {
        let sonames = names(&["librocblas.so.3", "librocblas.so.0"]);
        let dirs = names(&["/opt/rocm-5.7.1/lib/", "/opt/rocm/lib"]);
        assert_eq!(
            candidates(Some("/home/u/venv/rocm/lib"), &sonames, &dirs),
            [
                "/home/u/venv/rocm/lib/librocblas.so.3",
                "/home/u/venv/rocm/lib/librocblas.so.0",
                "librocblas.so.3",
                "librocblas.so.0",
                "/opt/rocm-5.7.1/lib/librocblas.so.3",
                "/opt/rocm-5.7.1/lib/librocblas.so.0",
                "/opt/rocm/lib/librocblas.so.3",
                "/opt/rocm/lib/librocblas.so.0",
            ]
        );
        // The runtime's own directory is one of ROCm's: each path once, in the first place.
        let one = names(&["libMIOpen.so.1"]);
        assert_eq!(
            candidates(Some("/opt/rocm/lib"), &one, &dirs),
            ["/opt/rocm/lib/libMIOpen.so.1", "libMIOpen.so.1", "/opt/rocm-5.7.1/lib/libMIOpen.so.1"]
        );
        assert_eq!(candidates(None, &one, &[]), ["libMIOpen.so.1"]);
    }

    #[test]
    fn a_loaded_library_is_found_with_its_path_and_an_absent_one_is_not_loaded() {
        let opened = open("libc", "RWO_TEST_NO_SUCH_VAR", &names(&["libc.so.6"])).unwrap_or_else(|e| panic!("{e}"));
        let libc = LibC::resolve(&opened.lib).unwrap_or_else(|e| panic!("{e}"));
        let path = path_of(libc.strlen as *const std::ffi::c_void).unwrap_or_default();
        assert!(path.starts_with('/') && path.ends_with("/libc.so.6"), "{path:?}");
        assert!(loaded("libc.so.6"));
        assert!(!loaded("librwo-absent.so.1"));
        assert_eq!(path_of(std::ptr::null()), None);
    }

    #[test]
    fn a_library_that_exists_but_does_not_load_says_why() {
        // A file that is not a shared object: dlopen finds it and refuses it.
        let path = std::env::temp_dir().join(format!("rwo-not-a-library-{}.so", std::process::id()));
        std::fs::write(&path, b"not an ELF file").unwrap_or_else(|e| panic!("{e}"));
        let name = path.display().to_string();
        let err = open("libbar", "RWO_TEST_NO_SUCH_VAR", &names(&["librwo-absent.so.1", &name])).err();
        let _ = std::fs::remove_file(&path);
        let err = err.unwrap_or_default();
        assert!(err.starts_with(&format!("{name} failed to load: ")), "{err}");
    }
}

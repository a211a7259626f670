//! Where a loaded library's segments are, and moving its pages to anonymous memory with the same bytes: what
//! a library mapped from its own file needs to stop depending on that file (`lease`).

use std::sync::OnceLock;

/// The size of a memory page.
fn page_size() -> usize {
    // SAFETY: sysconf reads a constant.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// One loadable segment of a mapped library: where it is, where its bytes are in the file, and its flags.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    start: usize,
    offset: u64,
    file_size: usize,
    pub(super) flags: u32,
}

/// A loaded object's name, loadable segments and RELRO range (made read-only after relocation).
pub(super) struct LoadedObject {
    pub(super) name: Vec<u8>,
    pub(super) segments: Vec<Segment>,
    relro: Option<(usize, usize)>,
}

/// The loaded object that holds `inside` (and is called `name`, when given): found by glibc's
/// `_dl_find_object` (2.35) where there is one, which takes the time of a tree search, else by walking the
/// dynamic loader's whole list (`dl_iterate_phdr`), whose time grows with every library ever loaded.
pub(super) fn loaded_object(inside: usize, name: Option<&[u8]>) -> Option<LoadedObject> {
    if let Some(found) = find_object(inside) {
        return found.filter(|object| name.is_none_or(|wanted| wanted == object.name));
    }
    walk_objects(inside, name)
}

/// `struct dl_find_object` of glibc 2.35, with room for fields a later version adds.
#[repr(C)]
struct DlFindObject {
    flags: u64,
    map_start: *mut libc::c_void,
    map_end: *mut libc::c_void,
    link_map: *const LinkMap,
    eh_frame: *mut libc::c_void,
    reserved: [u64; 32],
}

/// The public head of glibc's `struct link_map`.
#[repr(C)]
pub(super) struct LinkMap {
    addr: usize,
    pub(super) name: *const libc::c_char,
}

type FindObject = unsafe extern "C" fn(*mut libc::c_void, *mut DlFindObject) -> libc::c_int;

/// The object holding `inside` through `_dl_find_object`: `None` when this C library has none or the object's
/// program headers are not where they can be read, `Some(None)` when no object holds the address.
fn find_object(inside: usize) -> Option<Option<LoadedObject>> {
    static FIND: OnceLock<Option<FindObject>> = OnceLock::new();
    let find = (*FIND.get_or_init(|| {
        // SAFETY: dlsym looks a name up; the symbol, when there, has this signature (glibc's <dlfcn.h>).
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_dl_find_object".as_ptr()) };
        (!symbol.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, FindObject>(symbol) })
    }))?;
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut found: DlFindObject = unsafe { std::mem::zeroed() };
    // SAFETY: `found` is large enough for the struct the function fills.
    if unsafe { find(inside as *mut libc::c_void, &mut found) } != 0 || found.link_map.is_null() {
        return Some(None);
    }
    // SAFETY: a non-null `dlfo_link_map` points to the object's live `link_map`, whose name is a C string.
    let (bias, name) = unsafe {
        let map = &*found.link_map;
        let name = if map.name.is_null() { Vec::new() } else { std::ffi::CStr::from_ptr(map.name).to_bytes().to_vec() };
        (map.addr, name)
    };
    let (start, end) = (found.map_start as usize, found.map_end as usize);
    // The ELF header and the program headers at the start of the first segment, as the linkers put them.
    // SAFETY: the object's first page is mapped and readable; only read after the bounds are checked.
    let headers = unsafe {
        let header = std::slice::from_raw_parts(start as *const u8, 64);
        if end < start + 4096 || &header[..4] != b"\x7fELF" {
            return None;
        }
        let phoff = usize::try_from(u64::from_ne_bytes(header[0x20..0x28].try_into().ok()?)).ok()?;
        let phentsize = usize::from(u16::from_ne_bytes([header[0x36], header[0x37]]));
        let phnum = usize::from(u16::from_ne_bytes([header[0x38], header[0x39]]));
        if phentsize != std::mem::size_of::<libc::Elf64_Phdr>() || phoff + phentsize * phnum > 4096 {
            return None;
        }
        std::slice::from_raw_parts((start + phoff) as *const libc::Elf64_Phdr, phnum)
    };
    Some(Some(object_from(bias, name, headers)))
}

/// The object holding `inside` (and called `name`, when given), by walking the dynamic loader's list.
fn walk_objects(inside: usize, name: Option<&[u8]>) -> Option<LoadedObject> {
    struct Search<'a> {
        inside: usize,
        name: Option<&'a [u8]>,
        found: Option<LoadedObject>,
    }
    // SAFETY (of the callback): called by `dl_iterate_phdr` only, with its own arguments.
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the dynamic loader passes a valid `dl_phdr_info` whose `dlpi_phdr` has `dlpi_phnum` entries,
        // and `data` is the `Search` handed to `dl_iterate_phdr` below.
        let (info, search) = unsafe { (&*info, &mut *data.cast::<Search>()) };
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let base = info.dlpi_addr as usize;
        let holds = headers.iter().any(|h| {
            h.p_type == libc::PT_LOAD
                && (base + h.p_vaddr as usize..base + (h.p_vaddr + h.p_memsz) as usize).contains(&search.inside)
        });
        if !holds {
            return 0;
        }
        let name = if info.dlpi_name.is_null() {
            &[][..]
        } else {
            // SAFETY: a non-null `dlpi_name` is a NUL-terminated string the loader owns for the call.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        if search.name.is_some_and(|wanted| wanted != name) {
            return 0;
        }
        search.found = Some(object_from(base, name.to_vec(), headers));
        1
    }
    let mut search = Search { inside, name, found: None };
    // SAFETY: `visit` matches the callback type and only reads what the loader passes it.
    unsafe { libc::dl_iterate_phdr(Some(visit), std::ptr::addr_of_mut!(search).cast()) };
    search.found
}

/// An object's segments and RELRO range from its load bias and program headers.
fn object_from(base: usize, name: Vec<u8>, headers: &[libc::Elf64_Phdr]) -> LoadedObject {
    let segments = headers
        .iter()
        .filter(|h| h.p_type == libc::PT_LOAD && h.p_filesz > 0)
        .map(|h| Segment {
            start: base + h.p_vaddr as usize,
            offset: h.p_offset,
            file_size: h.p_filesz as usize,
            flags: h.p_flags,
        })
        .collect();
    let relro = headers
        .iter()
        .find(|h| h.p_type == libc::PT_GNU_RELRO)
        .map(|h| (base + h.p_vaddr as usize, base + (h.p_vaddr + h.p_memsz) as usize));
    LoadedObject { name, segments, relro }
}

/// The page-aligned range a segment's file bytes are mapped to, and the file offset of its start.
pub(super) fn mapped_range(segment: &Segment) -> (usize, usize, u64) {
    let page = page_size();
    let start = segment.start & !(page - 1);
    let end = (segment.start + segment.file_size + page - 1) & !(page - 1);
    (start, end, segment.offset - (segment.start - start) as u64)
}

/// Which pages of the written segments [`privatize`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    /// The pages written after relocation (data, the lazily bound GOT): moved at load, while only the loading
    /// thread can reach them, since later a write by another thread could be lost.
    Writable,
    /// The RELRO pages, read-only since relocation: nobody writes them, so they are moved only when the lease
    /// is broken (most of a Rust library's written segment: ~300 KiB of read_file's).
    Relro,
}

/// Replaces the file-backed pages of the written segments (`which` of them) with anonymous memory holding the
/// same bytes: a fresh mapping is filled beside them and moved over them in one `mremap`; RELRO pages are made
/// read-only again.
pub(super) fn privatize(object: &LoadedObject, which: Written) -> Result<(), String> {
    let page = page_size();
    let relro = object.relro.map(|(from, to)| (from & !(page - 1), to & !(page - 1)));
    for segment in object.segments.iter().filter(|segment| segment.flags & libc::PF_W != 0) {
        let (start, end, _) = mapped_range(segment);
        let (relro_from, relro_to) = relro
            .map(|(from, to)| (from.max(start), to.min(end)))
            .filter(|(from, to)| from < to)
            .unwrap_or((start, start));
        let ranges = match which {
            Written::Relro => vec![(relro_from, relro_to, libc::PROT_READ)],
            Written::Writable => vec![
                (start, relro_from, libc::PROT_READ | libc::PROT_WRITE),
                (relro_to, end, libc::PROT_READ | libc::PROT_WRITE),
            ],
        };
        for (from, to, prot) in ranges.into_iter().filter(|(from, to, _)| from < to) {
            move_to_anonymous(from, to, prot)?;
        }
    }
    Ok(())
}

/// Moves the mapped range `from..to` to a fresh anonymous mapping with the same bytes and protection `prot`.
fn move_to_anonymous(from: usize, to: usize, prot: libc::c_int) -> Result<(), String> {
    let len = to - from;
    // SAFETY: a fresh private anonymous mapping; nothing else knows it until it is moved over the range.
    let fresh = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if fresh == libc::MAP_FAILED {
        return Err(format!("mapping memory for the pages at {from:#x}: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the range is mapped and readable, and nobody writes it meanwhile (see [`Written`]); `fresh` is
    // ours.
    unsafe { std::ptr::copy_nonoverlapping(from as *const u8, fresh.cast::<u8>(), len) };
    if prot != libc::PROT_READ | libc::PROT_WRITE {
        // SAFETY: our own mapping.
        unsafe { libc::mprotect(fresh, len, prot) };
    }
    // SAFETY: moves our mapping over the library's pages, which hold the same bytes.
    let moved =
        unsafe { libc::mremap(fresh, len, len, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, from as *mut libc::c_void) };
    if moved != from as *mut libc::c_void {
        let e = std::io::Error::last_os_error();
        // SAFETY: `fresh` is still ours when the move failed.
        unsafe { libc::munmap(fresh, len) };
        return Err(format!("moving the pages at {from:#x}: {e}"));
    }
    Ok(())
}

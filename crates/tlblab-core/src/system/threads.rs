//! The engine's address spaces and threads as a run sets them up: spaces created, regions of
//! other page sizes and shared objects mapped, software threads bound to hardware threads.

use super::*;

impl System {
    pub fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// Creates an address space (process) and returns its index. ASIDs are assigned 1, 2, ...
    /// (the OS model's ASID allocator may reassign them).
    pub fn create_space(&mut self) -> Result<usize, SimError> {
        let id = self.spaces.len() as u32;
        let (format, layout) = (self.config.page_table.format, self.config.page_table.layout);
        let pt = PageTable::with_layout(format, layout, &mut self.frames)
            .map_err(|e| oom(e, "physical"))?;
        self.space_generation.push(0);
        self.spaces.push(AddressSpace {
            id,
            // Assigned by the ASID allocator when the space is first scheduled.
            asid: Asid(0),
            vmid: Vmid(if self.host.is_some() { 1 } else { 0 }),
            domain: Domain(0),
            pt,
            regions: Vec::new(),
            default_size: self.config.page_table.page_size,
        });
        Ok(id as usize)
    }

    /// Maps `start..start+len` of `space` with `size` pages from now on (first touch decides).
    pub fn set_region_page_size(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
    ) -> Result<(), SimError> {
        self.add_region(space, start, len, size, None, false)
    }

    /// Backs `start..start+len` of `space` by shared object `object`: every address space that
    /// maps the same object (at any address) shares its frames. `global`: the kernel's mapping
    /// (`prot::GLOBAL`), its leaf descriptors without the nG bit, so the TLB entries filled
    /// from them translate for every ASID and survive ASID rollovers.
    pub fn map_shared(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
        object: u32,
        global: bool,
    ) -> Result<(), SimError> {
        self.add_region(space, start, len, size, Some(object), global)
    }

    /// Newer regions take precedence over older ones that overlap them.
    pub(super) fn add_region(
        &mut self,
        space: usize,
        start: VirtAddr,
        len: u64,
        size: PageSize,
        object: Option<u32>,
        global: bool,
    ) -> Result<(), SimError> {
        let fmt = self.config.page_table.format;
        if !fmt.supports(size) {
            return Err(SimError(format!(
                "page size {size} is not supported by the {} page-table format",
                fmt.name()
            )));
        }
        self.spaces[space].regions.insert(
            0,
            (start.0, start.0.saturating_add(len), size, object, global),
        );
        self.any_global |= global;
        Ok(())
    }

    /// Binds `thread` to `space`, running on hardware thread `cpu`.
    pub fn bind_thread(&mut self, thread: ThreadId, space: usize, cpu: usize) {
        let t = thread.0 as usize;
        if self.threads.len() <= t {
            self.threads.resize(t + 1, None);
        }
        let stat = match self.threads[t] {
            Some(s) => s.stat,
            None => {
                self.thread_stats.push((
                    thread.0,
                    UnitStats::new(self.tlb_names.len(), self.cache_names.len()),
                ));
                self.thread_stats.len() - 1
            }
        };
        self.threads[t] = Some(ThreadState {
            space,
            cpu: cpu % self.cpus.len(),
            stat,
        });
    }

    /// The state of software thread `thread`; a thread first seen runs in the first address
    /// space, on hardware thread (id mod hardware threads).
    #[inline]
    pub(crate) fn thread_state(&mut self, thread: ThreadId) -> Result<ThreadState, SimError> {
        if let Some(Some(s)) = self.threads.get(thread.0 as usize) {
            return Ok(*s);
        }
        self.new_thread_state(thread)
    }

    /// The hardware thread `thread` runs on (`thread_state`'s, without copying the whole
    /// state: the run loops ask it per record).
    #[inline(always)]
    pub(super) fn cpu_of(&mut self, thread: ThreadId) -> Result<usize, SimError> {
        match self.threads.get(thread.0 as usize) {
            Some(Some(s)) => Ok(s.cpu),
            _ => Ok(self.new_thread_state(thread)?.cpu),
        }
    }

    /// `thread_state` of a thread not seen before (the multi-core run loop asks for every
    /// queued access's: the known case inline, this one out of the way).
    #[cold]
    #[inline(never)]
    pub(super) fn new_thread_state(&mut self, thread: ThreadId) -> Result<ThreadState, SimError> {
        if thread.0 > 1 << 20 {
            return Err(SimError(format!(
                "thread id {} is too large (expected < 2^20)",
                thread.0
            )));
        }
        if self.spaces.is_empty() {
            self.create_space()?;
        }
        let cpu = thread.0 as usize % self.cpus.len();
        self.bind_thread(thread, 0, cpu);
        Ok(self.threads[thread.0 as usize].unwrap())
    }

    /// The hardware thread `thread` runs on (binding unknown threads as `access` would).
    pub fn thread_cpu(&mut self, thread: ThreadId) -> Result<usize, SimError> {
        Ok(self.thread_state(thread)?.cpu)
    }

    /// Places `thread` on hardware thread `cpu` without the migration policy (first placement).
    pub fn bind_thread_cpu(&mut self, thread: ThreadId, cpu: usize) -> Result<(), SimError> {
        let st = self.thread_state(thread)?;
        self.threads[thread.0 as usize] = Some(ThreadState {
            cpu: cpu % self.cpus.len(),
            ..st
        });
        Ok(())
    }
}

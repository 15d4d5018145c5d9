//! The registry: every technique's model (`techniques/`) paired with its naive twin
//! (`reference/twins/`), one line each. It is the one module that sees both sides, so that the
//! models and the reference model that checks them import neither each other. Everything that
//! lists, builds or installs a technique, in the engine or in the reference, reads it.

use crate::machine::{MachineConfig, TechniqueSpec};
use crate::reference::twins::{
    ColoringTwin, FassTwin, ForeignTwin, LockdownTwin, MigrationTwin, PtBakerTwin,
};
use crate::reference::{ReferenceModel, Twin};
use crate::system::{SimError, System, Technique};
use crate::techniques::fass::{self, Fass};
use crate::techniques::foreign_entries::{self, ForeignEntries};
use crate::techniques::lockdown::{self, Lockdown};
use crate::techniques::pt_baker::{self, PtBaker};
use crate::techniques::tlb_coloring::{self, TlbColoring};
use crate::techniques::tlb_migration::{self, TlbMigration};
use crate::techniques::{Model, Params, TechniqueInfo};
use std::collections::BTreeMap;

/// One technique as the registry holds it: what the catalog lists, how a run builds its model,
/// how the reference model builds its naive twin. Made by `Registration::of`.
#[derive(Clone, Copy)]
pub struct Registration {
    pub info: TechniqueInfo,
    pub build: BuildModel,
    pub twin: BuildTwin,
}

/// Builds a technique's model from its checked parameters, the machine and the run's seed.
pub type BuildModel = fn(&Params, &MachineConfig, u64) -> Result<Box<dyn Technique>, String>;

/// Builds a technique's twin from the spec's text, the machine and the run's seed.
pub type BuildTwin = fn(&TechniqueSpec, &MachineConfig, u64) -> Result<Box<dyn Twin>, String>;

impl Registration {
    /// The model `M`, whose catalog entry is `info`, with its naive twin `T`: a technique
    /// cannot be registered without one.
    pub const fn of<M: Model, T: Twin + 'static>(info: TechniqueInfo) -> Registration {
        Registration {
            info,
            build: build_model::<M>,
            twin: build_twin::<T>,
        }
    }
}

fn build_model<M: Model>(
    params: &Params,
    machine: &MachineConfig,
    seed: u64,
) -> Result<Box<dyn Technique>, String> {
    Ok(Box::new(M::build(params, machine, seed)?))
}

fn build_twin<T: Twin + 'static>(
    spec: &TechniqueSpec,
    machine: &MachineConfig,
    seed: u64,
) -> Result<Box<dyn Twin>, String> {
    Ok(Box::new(T::new(spec, machine, seed)?))
}

/// Every technique, in seed order: one line each, a model and its twin.
pub const REGISTRY: &[Registration] = &[
    Registration::of::<TlbMigration, MigrationTwin>(tlb_migration::INFO),
    Registration::of::<PtBaker, PtBakerTwin>(pt_baker::INFO),
    Registration::of::<Fass, FassTwin>(fass::INFO),
    Registration::of::<TlbColoring, ColoringTwin>(tlb_coloring::INFO),
    Registration::of::<Lockdown, LockdownTwin>(lockdown::INFO),
    Registration::of::<ForeignEntries, ForeignTwin>(foreign_entries::INFO),
];

/// A list of registrations to look techniques up in: `Registry::BUILT_IN` (`REGISTRY`) for
/// every run; a test can put a technique of its own beside them (`tests/technique_registry.rs`).
#[derive(Clone, Copy)]
pub struct Registry<'a>(pub &'a [Registration]);

impl Registry<'static> {
    pub const BUILT_IN: Registry<'static> = Registry(REGISTRY);
}

impl<'a> Registry<'a> {
    /// Every technique's catalog entry, in registration order.
    pub fn catalog(self) -> Vec<TechniqueInfo> {
        self.0.iter().map(|r| r.info).collect()
    }

    /// The technique named `name`, or an error listing the known ones.
    pub fn find(self, name: &str) -> Result<&'a Registration, String> {
        self.0.iter().find(|r| r.info.name == name).ok_or_else(|| {
            let names: Vec<_> = self.0.iter().map(|r| r.info.name).collect();
            format!(
                "unknown technique '{name}': expected one of {}",
                names.join(", ")
            )
        })
    }

    /// Builds the technique `spec` names for `machine` (the run's seed for anything random).
    /// The error names the technique and the parameter.
    pub fn build(
        self,
        spec: &TechniqueSpec,
        machine: &MachineConfig,
        seed: u64,
    ) -> Result<Box<dyn Technique>, String> {
        let r = self.find(&spec.name)?;
        (r.build)(&Params::new(r.info, &spec.params)?, machine, seed)
    }

    /// Builds `spec` for the system's machine and installs it; the statistics then name it
    /// with every parameter it ran with, defaults included (`Stats::technique`).
    pub fn install(self, sys: &mut System, spec: &TechniqueSpec) -> Result<(), SimError> {
        let t = self
            .build(spec, &sys.config, sys.options.seed)
            .map_err(SimError)?;
        let info = self.find(&spec.name).map_err(SimError)?.info;
        let mut resolved: BTreeMap<String, String> = info
            .params
            .iter()
            .map(|p| (p.name.to_string(), p.default.to_string()))
            .collect();
        resolved.extend(spec.params.clone());
        sys.set_technique_params(resolved);
        sys.install_technique(t)
    }
}

/// Every technique, in seed order.
pub fn catalog() -> Vec<TechniqueInfo> {
    Registry::BUILT_IN.catalog()
}

/// Builds the technique `spec` names for `machine` (`Registry::build` over `REGISTRY`).
pub fn build(
    spec: &TechniqueSpec,
    machine: &MachineConfig,
    seed: u64,
) -> Result<Box<dyn Technique>, String> {
    Registry::BUILT_IN.build(spec, machine, seed)
}

/// Builds `spec` for the system's machine and installs it (`Registry::install` over
/// `REGISTRY`).
pub fn install(sys: &mut System, spec: &TechniqueSpec) -> Result<(), SimError> {
    Registry::BUILT_IN.install(sys, spec)
}

impl ReferenceModel {
    /// Installs the naive twin of the technique `spec` names (before the first record, as
    /// `registry::install`).
    pub fn install_twin(&mut self, spec: &TechniqueSpec) -> Result<(), String> {
        self.install_twin_from(Registry::BUILT_IN, spec)
    }

    /// Installs the twin `registry` pairs with the technique `spec` names, its parameter
    /// names checked against the technique's catalog entry.
    pub fn install_twin_from(
        &mut self,
        registry: Registry,
        spec: &TechniqueSpec,
    ) -> Result<(), String> {
        let registration = registry.find(&spec.name)?;
        let known = registration.info.params;
        if let Some(k) = spec
            .params
            .keys()
            .find(|k| !known.iter().any(|p| p.name == *k))
        {
            return Err(format!("twin {}: no parameter '{k}'", spec.name));
        }
        let twin = (registration.twin)(spec, self.config(), self.seed())?;
        self.set_twin(twin);
        Ok(())
    }
}

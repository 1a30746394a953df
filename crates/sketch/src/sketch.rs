//! A sketch: every stroke the user has drawn, what each is for, which strokes branch off which,
//! and the edits made, undoable (digest 004 §4: a path stroke per group, branching strokes
//! whose branches are followed by subsets, and an optional formation stroke per group; §4.3:
//! strokes redrawn while the simulation runs).
//!
//! A path stroke that starts within [`Sketch::branch_snap`] metres of an earlier path stroke
//! is a **branch** of it: the way along a branch is the earlier stroke up to the nearest point
//! to the branch's start, then the branch ([`Sketch::paths`]). Subsets of walkers sent down
//! different leaves go the same way up to the fork and apart after it (digest 004 §12 test 9).

use std::collections::BTreeMap;

use glam::DVec2;

use crate::{SketchError, Stroke, StrokeId};

/// What a stroke is for.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrokeKind {
    /// A way to walk (Mode A waypoints or a Mode B field).
    #[default]
    Path,
    /// A formation's shape: the drag direction is the formation's facing.
    Formation,
}

/// A stroke in a sketch.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct SketchStroke {
    /// The points.
    pub stroke: Stroke,
    /// What it is for.
    pub kind: StrokeKind,
    /// The path stroke it branches off and how far along that stroke the fork is, metres.
    pub branch_of: Option<(StrokeId, f64)>,
}

/// One edit, with what it replaced (for undo).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    /// A stroke appeared (`None` before) or changed or went (`None` after).
    Set {
        id: StrokeId,
        before: Option<SketchStroke>,
        after: Option<SketchStroke>,
    },
    /// Several edits made as one (an erase across strokes).
    Many(Vec<Edit>),
}

/// Every stroke drawn, with undo and redo (see the module doc).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Sketch {
    strokes: BTreeMap<StrokeId, SketchStroke>,
    next: u32,
    /// A path stroke starting within this of an earlier one branches off it, metres.
    pub branch_snap: f64,
    #[cfg_attr(feature = "serde", serde(skip))]
    undo: Vec<Edit>,
    #[cfg_attr(feature = "serde", serde(skip))]
    redo: Vec<Edit>,
}

impl Default for Sketch {
    fn default() -> Self {
        Self {
            strokes: BTreeMap::new(),
            next: 0,
            branch_snap: 1.0,
            undo: Vec::new(),
            redo: Vec::new(),
        }
    }
}

impl Sketch {
    /// An empty sketch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stroke.
    pub fn stroke(&self, id: StrokeId) -> Option<&SketchStroke> {
        self.strokes.get(&id)
    }

    /// Every stroke, in the order drawn.
    pub fn strokes(&self) -> impl Iterator<Item = (StrokeId, &SketchStroke)> {
        self.strokes.iter().map(|(k, v)| (*k, v))
    }

    /// Adds a stroke; a path stroke starting near an earlier path stroke branches off it.
    /// An empty stroke is refused.
    pub fn add(&mut self, stroke: Stroke, kind: StrokeKind) -> Result<StrokeId, SketchError> {
        let start = stroke.start().ok_or(SketchError::EmptyStroke)?;
        let branch_of = match kind {
            StrokeKind::Path => self.fork_near(start),
            StrokeKind::Formation => None,
        };
        let id = StrokeId(self.next);
        self.next += 1;
        let entry = SketchStroke {
            stroke,
            kind,
            branch_of,
        };
        self.apply(Edit::Set {
            id,
            before: None,
            after: Some(entry),
        });
        Ok(id)
    }

    /// Replaces a stroke's points (a path redrawn while walkers follow it: re-order them with
    /// the new stroke).
    pub fn replace(&mut self, id: StrokeId, stroke: Stroke) -> Result<(), SketchError> {
        if stroke.is_empty() {
            return Err(SketchError::EmptyStroke);
        }
        let before = self
            .strokes
            .get(&id)
            .cloned()
            .ok_or(SketchError::UnknownStroke(id))?;
        let after = SketchStroke {
            stroke,
            ..before.clone()
        };
        self.apply(Edit::Set {
            id,
            before: Some(before),
            after: Some(after),
        });
        Ok(())
    }

    /// Continues a stroke with more points.
    pub fn append(&mut self, id: StrokeId, more: &Stroke) -> Result<(), SketchError> {
        let mut stroke = self
            .strokes
            .get(&id)
            .ok_or(SketchError::UnknownStroke(id))?
            .stroke
            .clone();
        stroke.append(more);
        self.replace(id, stroke)
    }

    /// Removes a stroke; branches off it become strokes of their own.
    pub fn remove(&mut self, id: StrokeId) -> Result<(), SketchError> {
        let before = self
            .strokes
            .get(&id)
            .cloned()
            .ok_or(SketchError::UnknownStroke(id))?;
        let mut edits = vec![Edit::Set {
            id,
            before: Some(before),
            after: None,
        }];
        for (k, s) in &self.strokes {
            if s.branch_of.is_some_and(|(parent, _)| parent == id) {
                edits.push(Edit::Set {
                    id: *k,
                    before: Some(s.clone()),
                    after: Some(SketchStroke {
                        branch_of: None,
                        ..s.clone()
                    }),
                });
            }
        }
        self.apply(Edit::Many(edits));
        Ok(())
    }

    /// Rubs out every stroke's points within `radius` of `centre`, as one edit: a stroke cut in
    /// two keeps its id for the first piece and the second becomes a new stroke. Returns the
    /// strokes changed or made.
    pub fn erase(&mut self, centre: DVec2, radius: f64) -> Vec<StrokeId> {
        let mut edits = Vec::new();
        let mut touched = Vec::new();
        let mut next = self.next;
        for (id, s) in &self.strokes {
            let pieces = s.stroke.erased(centre, radius);
            if pieces.len() == 1 && pieces[0] == s.stroke {
                continue;
            }
            let mut pieces = pieces.into_iter();
            let first = pieces.next().map(|p| SketchStroke {
                stroke: p,
                ..s.clone()
            });
            edits.push(Edit::Set {
                id: *id,
                before: Some(s.clone()),
                after: first,
            });
            touched.push(*id);
            for p in pieces {
                let new = StrokeId(next);
                next += 1;
                edits.push(Edit::Set {
                    id: new,
                    before: None,
                    after: Some(SketchStroke {
                        stroke: p,
                        kind: s.kind,
                        branch_of: None,
                    }),
                });
                touched.push(new);
            }
        }
        if !edits.is_empty() {
            self.next = next;
            self.apply(Edit::Many(edits));
        }
        touched
    }

    /// Undoes the last edit.
    pub fn undo(&mut self) -> Result<(), SketchError> {
        let edit = self.undo.pop().ok_or(SketchError::NothingToUndo("undo"))?;
        self.play(&edit, true);
        self.redo.push(edit);
        Ok(())
    }

    /// Redoes the last edit undone.
    pub fn redo(&mut self) -> Result<(), SketchError> {
        let edit = self.redo.pop().ok_or(SketchError::NothingToUndo("redo"))?;
        self.play(&edit, false);
        self.undo.push(edit);
        Ok(())
    }

    /// The way to walk to the end of each path stroke: its ancestors up to each fork, then
    /// itself, as one stroke, with the stroke's id. A stroke continued from its end by a
    /// branch has no way of its own (its end is the branch's fork).
    pub fn paths(&self) -> Vec<(StrokeId, Stroke)> {
        // A stroke continued from its end by a branch ends nowhere of its own.
        let parents: Vec<StrokeId> = self
            .strokes
            .values()
            .filter_map(|s| s.branch_of)
            .filter(|(p, fork)| {
                self.strokes
                    .get(p)
                    .is_some_and(|parent| *fork >= parent.stroke.length() - self.branch_snap)
            })
            .map(|(p, _)| p)
            .collect();
        self.strokes
            .iter()
            .filter(|(id, s)| s.kind == StrokeKind::Path && !parents.contains(id))
            .map(|(id, _)| (*id, self.path_to(*id)))
            .collect()
    }

    /// The way along stroke `id` from the root of its branches.
    pub fn path_to(&self, id: StrokeId) -> Stroke {
        let mut chain = vec![(id, f64::INFINITY)];
        let mut at = id;
        // Branches form a tree (a branch is added after its parent): walk up to the root.
        while let Some((parent, fork)) = self.strokes.get(&at).and_then(|s| s.branch_of) {
            if chain.iter().any(|(c, _)| *c == parent) {
                break;
            }
            chain.push((parent, fork));
            at = parent;
        }
        let mut out = Stroke::new();
        // Each entry above the first is an ancestor with the fork of the way along it.
        for &(sid, end) in chain.iter().rev() {
            let s = &self.strokes[&sid].stroke;
            let part = if end.is_finite() {
                s.between(0.0, end)
            } else {
                s.clone()
            };
            out.append(&part);
        }
        out
    }

    /// The path stroke nearest `p` within [`Self::branch_snap`], and the fork's arc position.
    fn fork_near(&self, p: DVec2) -> Option<(StrokeId, f64)> {
        self.strokes
            .iter()
            .filter(|(_, s)| s.kind == StrokeKind::Path)
            .filter_map(|(id, s)| {
                let (along, _, d) = s.stroke.nearest(p)?;
                (d <= self.branch_snap).then_some((*id, along, d))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(id, along, _)| (id, along))
    }

    fn apply(&mut self, edit: Edit) {
        self.play(&edit, false);
        self.undo.push(edit);
        self.redo.clear();
    }

    fn play(&mut self, edit: &Edit, backwards: bool) {
        match edit {
            Edit::Set { id, before, after } => {
                let value = if backwards { before } else { after };
                match value {
                    Some(s) => {
                        self.strokes.insert(*id, s.clone());
                    }
                    None => {
                        self.strokes.remove(id);
                    }
                }
            }
            Edit::Many(edits) => {
                if backwards {
                    edits.iter().rev().for_each(|e| self.play(e, true));
                } else {
                    edits.iter().for_each(|e| self.play(e, false));
                }
            }
        }
    }

    /// The sketch as RON text (strokes and settings; the undo history is not kept).
    #[cfg(feature = "serde")]
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .expect("a sketch always serialises")
    }

    /// A sketch from RON text.
    #[cfg(feature = "serde")]
    pub fn from_ron(text: &str) -> Result<Self, ron::error::SpannedError> {
        ron::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(a: DVec2, b: DVec2) -> Stroke {
        Stroke::from_positions([a, b]).unwrap()
    }

    #[test]
    fn a_stroke_starting_on_another_branches_off_it_and_paths_run_through_the_fork() {
        let mut sketch = Sketch::new();
        let trunk = sketch
            .add(line(DVec2::ZERO, DVec2::new(10.0, 0.0)), StrokeKind::Path)
            .unwrap();
        let branch = sketch
            .add(
                line(DVec2::new(5.0, 0.3), DVec2::new(5.0, 8.0)),
                StrokeKind::Path,
            )
            .unwrap();
        let (_, fork) = sketch.stroke(branch).unwrap().branch_of.unwrap();
        assert!((fork - 5.0).abs() < 1e-9);
        let paths = sketch.paths();
        assert_eq!(paths.len(), 2);
        let to_branch = &paths.iter().find(|(id, _)| *id == branch).unwrap().1;
        assert_eq!(to_branch.start(), Some(DVec2::ZERO));
        assert_eq!(to_branch.end(), Some(DVec2::new(5.0, 8.0)));
        let to_trunk = &paths.iter().find(|(id, _)| *id == trunk).unwrap().1;
        assert_eq!(to_trunk.end(), Some(DVec2::new(10.0, 0.0)));
    }

    #[test]
    fn edits_undo_and_redo_in_order() {
        let mut sketch = Sketch::new();
        let a = sketch
            .add(line(DVec2::ZERO, DVec2::new(10.0, 0.0)), StrokeKind::Path)
            .unwrap();
        let drawn = sketch.clone();
        let cut = sketch.erase(DVec2::new(5.0, 0.0), 1.0);
        // A two-point line has no point near the middle: nothing to rub out.
        assert!(cut.is_empty());
        sketch
            .replace(
                a,
                Stroke::from_positions((0..=10).map(|k| DVec2::new(k as f64, 0.0))).unwrap(),
            )
            .unwrap();
        let cut = sketch.erase(DVec2::new(5.0, 0.0), 1.0);
        assert_eq!(cut.len(), 2);
        assert_eq!(sketch.strokes().count(), 2);
        sketch.undo().unwrap();
        assert_eq!(sketch.strokes().count(), 1);
        sketch.undo().unwrap();
        assert_eq!(sketch.stroke(a), drawn.stroke(a));
        sketch.redo().unwrap();
        sketch.redo().unwrap();
        assert_eq!(sketch.strokes().count(), 2);
        assert!(sketch.redo().is_err());
        sketch.remove(a).unwrap();
        sketch.undo().unwrap();
        assert!(sketch.stroke(a).is_some());
        assert_eq!(
            sketch.add(Stroke::new(), StrokeKind::Path),
            Err(SketchError::EmptyStroke)
        );
    }
}

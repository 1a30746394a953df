//! Indoor scenes (digest 003 §2.11, Table 4.2): a house of rectangular rooms joined by doors,
//! the rooms-and-doors graph agents plan on, markers labelled by room, and the action table
//! of an everyday routine.
//!
//! - [`House`]: rooms (axis-aligned rectangles, as a treemap floor plan gives) and doors (a
//!   point on the wall two rooms share, with a width). [`House::walls`] gives the walls as
//!   obstacles with the doors left open; [`House::room_at`] is a marker's room label l_k.
//! - [`House::doors_to`]: A* over the graph whose nodes are the doors and the agent's own
//!   position (the seed's temporary origin node), two nodes joined when they lie on one room,
//!   at their straight distance: the doors to pass, in order, to reach the target room.
//! - [`RoomKind::actions`]: the seed's action table; the seed gives no durations, ours are
//!   listed there.
//!
//! The routine's loop (pick an action at random, pass the doors, walk to a marker of the room,
//! wait for the action's duration, again) runs in [`crate::BioCrowd`].

use glam::DVec2;

use crowdfield_field::Shape;

use crate::MarkerError;

/// What a room is for (the seed's Table 4.2).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoomKind {
    /// Read, play, watch TV, relax.
    LivingRoom,
    /// Sleep.
    Bedroom,
    /// Shower, wash hands, use the toilet.
    Bathroom,
    /// Eat, drink, wash dishes.
    Kitchen,
    /// Wash clothes.
    Laundry,
    /// A hall or corridor: passed through, nothing done there.
    Hall,
}

/// An action of the routine: its name and how long it takes, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Action {
    /// What (the seed's Table 4.2).
    pub name: &'static str,
    /// How long the agent stays, seconds (ours: the seed gives none).
    pub duration: f64,
}

impl RoomKind {
    /// The seed's actions in this kind of room, with our durations (short, so that a routine
    /// shows in a minute of play: a real night's sleep would stop the show).
    pub fn actions(self) -> &'static [Action] {
        match self {
            RoomKind::LivingRoom => LIVING_ROOM,
            RoomKind::Bedroom => BEDROOM,
            RoomKind::Bathroom => BATHROOM,
            RoomKind::Kitchen => KITCHEN,
            RoomKind::Laundry => LAUNDRY,
            RoomKind::Hall => &[],
        }
    }
}

const fn act(name: &'static str, duration: f64) -> Action {
    Action { name, duration }
}
const LIVING_ROOM: &[Action] = &[
    act("read", 12.0),
    act("play", 10.0),
    act("watch TV", 15.0),
    act("relax", 8.0),
];
const BEDROOM: &[Action] = &[act("sleep", 20.0)];
const BATHROOM: &[Action] = &[
    act("shower", 8.0),
    act("wash hands", 3.0),
    act("use the toilet", 5.0),
];
const KITCHEN: &[Action] = &[act("eat", 10.0), act("drink", 3.0), act("wash dishes", 8.0)];
const LAUNDRY: &[Action] = &[act("wash clothes", 8.0)];

/// A room: an axis-aligned rectangle.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    /// Its name, for people.
    pub name: String,
    /// What it is for.
    pub kind: RoomKind,
    /// The lower-left corner.
    pub min: DVec2,
    /// The upper-right corner.
    pub max: DVec2,
}

impl Room {
    fn contains(&self, p: DVec2) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }

    /// Whether `p` lies on the room's outline (within `tolerance`).
    fn on_outline(&self, p: DVec2, tolerance: f64) -> bool {
        let inside = p.cmpge(self.min - tolerance).all() && p.cmple(self.max + tolerance).all();
        let near_side = (p.x - self.min.x).abs() <= tolerance
            || (p.x - self.max.x).abs() <= tolerance
            || (p.y - self.min.y).abs() <= tolerance
            || (p.y - self.max.y).abs() <= tolerance;
        inside && near_side
    }
}

/// A door between two rooms.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Door {
    /// Its centre, on the wall the rooms share.
    pub position: DVec2,
    /// The rooms it joins (indices into [`House::rooms`]).
    pub rooms: [usize; 2],
    /// How wide it opens, metres.
    pub width: f64,
}

/// A house: rooms and the doors between them (see the module doc).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct House {
    rooms: Vec<Room>,
    doors: Vec<Door>,
}

/// How far a door may lie off the shared wall, metres.
const ON_WALL: f64 = 0.05;

impl House {
    /// A house of `rooms` and `doors`. Refuses no rooms, rooms that are not finite or have no
    /// area, rooms that overlap, a door naming a missing room or one room twice, a door off
    /// the wall its rooms share or not finite or not wider than 0, and rooms without a door
    /// when the house has more than one room (nobody could walk in or out).
    pub fn new(rooms: Vec<Room>, doors: Vec<Door>) -> Result<Self, MarkerError> {
        let house = Self { rooms, doors };
        house.validate()?;
        Ok(house)
    }

    /// Checks what [`new`](Self::new) checks (for a house read from a file).
    pub fn validate(&self) -> Result<(), MarkerError> {
        let (rooms, doors) = (&self.rooms, &self.doors);
        if rooms.is_empty() {
            return Err(MarkerError::BadHouse("a house needs a room"));
        }
        for r in rooms {
            if !(r.min.is_finite() && r.max.is_finite()) {
                return Err(MarkerError::NonFinite("a room's corners"));
            }
            if !r.max.cmpgt(r.min).all() {
                return Err(MarkerError::BadHouse("a room with no area"));
            }
        }
        for (i, a) in rooms.iter().enumerate() {
            for b in &rooms[i + 1..] {
                let overlap = (a.max.min(b.max) - a.min.max(b.min)).min_element();
                if overlap > ON_WALL {
                    return Err(MarkerError::BadHouse("two rooms overlap"));
                }
            }
        }
        for d in doors {
            if !(d.position.is_finite() && d.width.is_finite()) {
                return Err(MarkerError::NonFinite("a door"));
            }
            if d.width <= 0.0 {
                return Err(MarkerError::BadHouse("a door must be wider than 0"));
            }
            let [a, b] = d.rooms;
            if a >= rooms.len() || b >= rooms.len() || a == b {
                return Err(MarkerError::BadHouse(
                    "a door must join two rooms of the house",
                ));
            }
            if !(rooms[a].on_outline(d.position, ON_WALL)
                && rooms[b].on_outline(d.position, ON_WALL))
            {
                return Err(MarkerError::BadHouse(
                    "a door must lie on the wall its two rooms share",
                ));
            }
        }
        if rooms.len() > 1 {
            for k in 0..rooms.len() {
                if !doors.iter().any(|d| d.rooms.contains(&k)) {
                    return Err(MarkerError::BadHouse("a room without a door"));
                }
            }
        }
        Ok(())
    }

    /// The rooms.
    pub fn rooms(&self) -> &[Room] {
        &self.rooms
    }

    /// The doors.
    pub fn doors(&self) -> &[Door] {
        &self.doors
    }

    /// The room holding `p`: a marker's label l_k (`None` outside the house). On a shared wall
    /// the first room listed wins.
    pub fn room_at(&self, p: DVec2) -> Option<usize> {
        self.rooms.iter().position(|r| r.contains(p))
    }

    /// Where the house's outline lies: the smallest box round every room.
    pub fn bounds(&self) -> (DVec2, DVec2) {
        self.rooms.iter().fold(
            (DVec2::splat(f64::INFINITY), DVec2::splat(f64::NEG_INFINITY)),
            |(lo, hi), r| (lo.min(r.min), hi.max(r.max)),
        )
    }

    /// The walls as obstacles: every room's outline as boxes `thickness` thick centred on it,
    /// each door's width left open (a wall two rooms share comes twice, which does no harm).
    pub fn walls(&self, thickness: f64) -> Vec<Shape> {
        let t = thickness.max(0.0) / 2.0;
        let mut out = Vec::new();
        for r in &self.rooms {
            let corners = [
                r.min,
                DVec2::new(r.max.x, r.min.y),
                r.max,
                DVec2::new(r.min.x, r.max.y),
            ];
            for k in 0..4 {
                let (a, b) = (corners[k], corners[(k + 1) % 4]);
                let along = (b - a).normalize();
                let length = a.distance(b);
                // The openings on this side, as intervals along it.
                let mut gaps: Vec<(f64, f64)> = self
                    .doors
                    .iter()
                    .filter(|d| {
                        let s = (d.position - a).dot(along);
                        (d.position - (a + along * s)).length() <= ON_WALL
                            && (-ON_WALL..=length + ON_WALL).contains(&s)
                    })
                    .map(|d| {
                        let s = (d.position - a).dot(along);
                        (s - d.width / 2.0, s + d.width / 2.0)
                    })
                    .collect();
                gaps.sort_by(|x, y| x.0.total_cmp(&y.0));
                let mut from = -t;
                for (g0, g1) in gaps.into_iter().chain([(length + t, length + t)]) {
                    if g0 > from {
                        let (p, q) = (a + along * from, a + along * g0);
                        out.push(Shape::Aabb {
                            min: p.min(q) - DVec2::splat(t),
                            max: p.max(q) + DVec2::splat(t),
                        });
                    }
                    from = from.max(g1);
                }
            }
        }
        out
    }

    /// The point `depth` metres into room `into` straight through door `door` (across the
    /// wall it lies on): where an agent heads to pass it. `None` for a door or room that does
    /// not exist or a door not on that room's outline.
    pub fn through(&self, door: usize, into: usize, depth: f64) -> Option<DVec2> {
        let d = self.doors.get(door)?;
        let r = self.rooms.get(into)?;
        let p = d.position;
        let step = if (p.x - r.min.x).abs() <= ON_WALL {
            DVec2::X
        } else if (p.x - r.max.x).abs() <= ON_WALL {
            -DVec2::X
        } else if (p.y - r.min.y).abs() <= ON_WALL {
            DVec2::Y
        } else if (p.y - r.max.y).abs() <= ON_WALL {
            -DVec2::Y
        } else {
            return None;
        };
        Some(p + step * depth)
    }

    /// The doors to pass, in order, from `from` into room `target` (A* over doors and the
    /// start, see the module doc); empty when `from` is already in it. Refuses a start
    /// outside the house or an unknown room ([`MarkerError::BadOrder`]) and a room the doors
    /// do not reach ([`MarkerError::NoRoute`]).
    pub fn doors_to(&self, from: DVec2, target: usize) -> Result<Vec<usize>, MarkerError> {
        if target >= self.rooms.len() {
            return Err(MarkerError::BadOrder("no such room"));
        }
        let here = self
            .room_at(from)
            .ok_or(MarkerError::BadOrder("the agent is not in the house"))?;
        if here == target {
            return Ok(Vec::new());
        }
        // Node n < doors.len(): door n; the start is doors.len().
        let start = self.doors.len();
        let at = |n: usize| {
            if n == start {
                from
            } else {
                self.doors[n].position
            }
        };
        let rooms_of = |n: usize| -> [usize; 2] {
            if n == start {
                [here, here]
            } else {
                self.doors[n].rooms
            }
        };
        const UNIT: f64 = 1e6;
        let found = pathfinding::prelude::astar(
            &start,
            |&n| {
                let mine = rooms_of(n);
                (0..self.doors.len())
                    .filter(|&m| m != n && self.doors[m].rooms.iter().any(|r| mine.contains(r)))
                    .map(|m| (m, (at(n).distance(at(m)) * UNIT).round() as u64))
                    .collect::<Vec<_>>()
            },
            // The distance to the target room's box: never more than to any of its doors.
            |&n| {
                let r = &self.rooms[target];
                (at(n).distance(at(n).clamp(r.min, r.max)) * UNIT).floor() as u64
            },
            |&n| n != start && self.doors[n].rooms.contains(&target),
        );
        let (path, _) = found.ok_or(MarkerError::NoRoute)?;
        Ok(path.into_iter().skip(1).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(kind: RoomKind, min: (f64, f64), max: (f64, f64)) -> Room {
        Room {
            name: format!("{kind:?}"),
            kind,
            min: DVec2::new(min.0, min.1),
            max: DVec2::new(max.0, max.1),
        }
    }

    fn door(x: f64, y: f64, a: usize, b: usize) -> Door {
        Door {
            position: DVec2::new(x, y),
            rooms: [a, b],
            width: 1.0,
        }
    }

    /// Three rooms in a row: the doors come in order, and a wall with a door is cut there.
    #[test]
    fn doors_come_in_order_and_walls_open_at_them() {
        let house = House::new(
            vec![
                room(RoomKind::Bedroom, (0.0, 0.0), (4.0, 4.0)),
                room(RoomKind::Hall, (4.0, 0.0), (8.0, 4.0)),
                room(RoomKind::Kitchen, (8.0, 0.0), (12.0, 4.0)),
            ],
            vec![door(4.0, 2.0, 0, 1), door(8.0, 1.0, 1, 2)],
        )
        .unwrap();
        assert_eq!(house.doors_to(DVec2::new(1.0, 1.0), 2).unwrap(), vec![0, 1]);
        assert_eq!(
            house.doors_to(DVec2::new(11.0, 1.0), 0).unwrap(),
            vec![1, 0]
        );
        assert!(house.doors_to(DVec2::new(1.0, 1.0), 0).unwrap().is_empty());
        assert!(house.doors_to(DVec2::new(-1.0, 1.0), 2).is_err());
        let walls = house.walls(0.1);
        let blocked = |p: DVec2| walls.iter().any(|w| w.distance(p).unwrap() <= 0.0);
        assert!(!blocked(DVec2::new(4.0, 2.0)));
        assert!(blocked(DVec2::new(4.0, 3.0)));
        assert!(!blocked(DVec2::new(8.0, 1.2)));
        assert!(blocked(DVec2::new(8.0, 2.5)));
        assert!(blocked(DVec2::new(12.0, 1.0)));
        assert_eq!(house.room_at(DVec2::new(9.0, 3.0)), Some(2));
    }

    #[test]
    fn bad_houses_are_refused() {
        let two = || {
            vec![
                room(RoomKind::Bedroom, (0.0, 0.0), (4.0, 4.0)),
                room(RoomKind::Kitchen, (4.0, 0.0), (8.0, 4.0)),
            ]
        };
        // Rooms without doors.
        assert!(matches!(
            House::new(two(), vec![]),
            Err(MarkerError::BadHouse(_))
        ));
        // A door off the shared wall, one naming a missing room, one joining a room to itself.
        assert!(House::new(two(), vec![door(2.0, 2.0, 0, 1)]).is_err());
        assert!(House::new(two(), vec![door(4.0, 2.0, 0, 5)]).is_err());
        assert!(House::new(two(), vec![door(4.0, 2.0, 1, 1)]).is_err());
        assert!(House::new(two(), vec![door(4.0, f64::NAN, 0, 1)]).is_err());
        assert!(House::new(vec![], vec![]).is_err());
        let mut overlapping = two();
        overlapping[1].min.x = 2.0;
        assert!(House::new(overlapping, vec![door(4.0, 2.0, 0, 1)]).is_err());
        // A third room the doors do not reach from the others: no route.
        let mut three = two();
        three.push(room(RoomKind::Laundry, (20.0, 0.0), (24.0, 4.0)));
        three.push(room(RoomKind::Hall, (24.0, 0.0), (28.0, 4.0)));
        let house = House::new(three, vec![door(4.0, 2.0, 0, 1), door(24.0, 2.0, 2, 3)]).unwrap();
        assert_eq!(
            house.doors_to(DVec2::new(1.0, 1.0), 2),
            Err(MarkerError::NoRoute)
        );
    }
}

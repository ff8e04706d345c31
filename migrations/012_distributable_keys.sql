-- Keys a database distributed by org_id (Citus, docs/scaling.md) can
-- enforce: a worker checks a primary key or unique index only within its
-- own shards, so each one must contain the distribution column, and a
-- foreign key between two distributed tables must pair org_id with org_id.
-- Every primary key and unique index of a table with org_id now includes
-- it; the UNIQUE (org_id, id) constraints the foreign keys used become the
-- primary keys they duplicated, and the other keys gain org_id at the end. The unique (org_id, event_id, id) of seats
-- and sections stay: foreign keys use them, and so does the hold
-- statement's lookup (org_id, event_id, id = ANY). Ids stay random uuids
-- and sequence numbers, unique in practice whatever the key says.
-- store.TestSchemaDistributable keeps it so, and lists the exceptions
-- (organizations, sessions, the API key hash) with their reasons.
--
-- The keys are rebuilt, so the tables are locked while it runs (seconds per
-- million rows): run it outside a sale.

-- The foreign keys that rest on keys replaced below; added again at the
-- end against the new ones.
ALTER TABLE events DROP CONSTRAINT events_org_id_chart_version_id_fkey;
ALTER TABLE sections DROP CONSTRAINT sections_org_id_event_id_fkey;
ALTER TABLE seats DROP CONSTRAINT seats_org_id_event_id_category_fkey;
ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_org_id_user_id_fkey;
ALTER TABLE bookings DROP CONSTRAINT bookings_org_id_event_id_fkey, DROP CONSTRAINT bookings_org_id_user_id_fkey;
ALTER TABLE tickets DROP CONSTRAINT tickets_hold_id_fkey, DROP CONSTRAINT tickets_org_id_booking_id_fkey;
ALTER TABLE occupancy_snapshots DROP CONSTRAINT occupancy_snapshots_org_id_event_id_fkey;
ALTER TABLE buyer_holds DROP CONSTRAINT buyer_holds_org_id_event_id_fkey, DROP CONSTRAINT buyer_holds_org_id_user_id_fkey;
ALTER TABLE chart_versions DROP CONSTRAINT chart_versions_org_id_chart_id_fkey;
ALTER TABLE hold_customers DROP CONSTRAINT hold_customers_hold_id_fkey;
ALTER TABLE house_allocations DROP CONSTRAINT house_allocations_org_id_event_id_fkey,
    DROP CONSTRAINT house_allocations_org_id_created_by_fkey;
ALTER TABLE house_allocation_seats DROP CONSTRAINT house_allocation_seats_org_id_allocation_id_fkey;
ALTER TABLE event_categories DROP CONSTRAINT event_categories_org_id_event_id_fkey;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_org_id_created_by_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_org_id_endpoint_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_org_id_event_id_fkey,
    DROP CONSTRAINT waitlist_entries_org_id_user_id_fkey;
ALTER TABLE waitlist_work DROP CONSTRAINT waitlist_work_org_id_event_id_fkey;
ALTER TABLE hold_requests DROP CONSTRAINT hold_requests_org_id_event_id_fkey,
    DROP CONSTRAINT hold_requests_org_id_user_id_fkey;

-- UNIQUE (org_id, id) becomes the primary key.
ALTER TABLE users DROP CONSTRAINT users_pkey, DROP CONSTRAINT users_org_id_id_key,
    ADD CONSTRAINT users_pkey PRIMARY KEY (org_id, id);
ALTER TABLE events DROP CONSTRAINT events_pkey, DROP CONSTRAINT events_org_id_id_key,
    ADD CONSTRAINT events_pkey PRIMARY KEY (org_id, id);
ALTER TABLE bookings DROP CONSTRAINT bookings_pkey, DROP CONSTRAINT bookings_org_id_id_key,
    ADD CONSTRAINT bookings_pkey PRIMARY KEY (org_id, id);
ALTER TABLE charts DROP CONSTRAINT charts_pkey, DROP CONSTRAINT charts_org_id_id_key,
    ADD CONSTRAINT charts_pkey PRIMARY KEY (org_id, id);
ALTER TABLE chart_versions DROP CONSTRAINT chart_versions_pkey, DROP CONSTRAINT chart_versions_org_id_id_key,
    ADD CONSTRAINT chart_versions_pkey PRIMARY KEY (org_id, id);
ALTER TABLE house_allocations DROP CONSTRAINT house_allocations_pkey, DROP CONSTRAINT house_allocations_org_id_id_key,
    ADD CONSTRAINT house_allocations_pkey PRIMARY KEY (org_id, id);
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey, DROP CONSTRAINT api_keys_org_id_id_key,
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (org_id, id);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey, DROP CONSTRAINT webhook_endpoints_org_id_id_key,
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (org_id, id);
-- seq is the place in line, unique because a sequence draws it; no query
-- finds an entry by it, so its unique index goes.
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_pkey, DROP CONSTRAINT waitlist_entries_org_id_id_key,
    DROP CONSTRAINT waitlist_entries_seq_key,
    ADD CONSTRAINT waitlist_entries_pkey PRIMARY KEY (org_id, id);
ALTER TABLE event_categories DROP CONSTRAINT event_categories_pkey, DROP CONSTRAINT event_categories_org_id_event_id_key_key,
    ADD CONSTRAINT event_categories_pkey PRIMARY KEY (org_id, event_id, key);

-- Keys that gain org_id at the end: their leading columns stay what they
-- were, so every lookup is planned as before whatever the statistics say.
-- (With org_id in front, a lookup by id on a table that had grown from
-- empty faster than autovacuum analyzes it could be planned on another
-- index that also leads with org_id, e.g. a buyer's active holds, and read
-- every active hold of the organization for each row.)
ALTER TABLE sections DROP CONSTRAINT sections_pkey, DROP CONSTRAINT sections_event_id_label_key,
    ADD CONSTRAINT sections_pkey PRIMARY KEY (id, org_id),
    ADD CONSTRAINT sections_org_id_event_id_label_key UNIQUE (event_id, label, org_id);
ALTER TABLE seats DROP CONSTRAINT seats_pkey, DROP CONSTRAINT seats_event_id_idx_key,
    DROP CONSTRAINT seats_event_id_section_id_row_label_number_key,
    ADD CONSTRAINT seats_pkey PRIMARY KEY (id, org_id),
    ADD CONSTRAINT seats_org_id_event_id_idx_key UNIQUE (event_id, idx, org_id),
    ADD CONSTRAINT seats_org_id_event_id_section_id_row_label_number_key UNIQUE (event_id, section_id, row_label, number, org_id);
ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_pkey, ADD CONSTRAINT seat_holds_pkey PRIMARY KEY (id, org_id);
DROP INDEX seat_holds_one_active;
CREATE UNIQUE INDEX seat_holds_one_active ON seat_holds (seat_id, org_id) WHERE status = 'active';
-- A hold is looked up by its id with its seat's org_id (h.org_id =
-- s.org_id, as a distributed join needs), which the planner carries over
-- as org_id = the constant: an active-holds index led by org_id would
-- then qualify on org_id alone and, with statistics that lag a table's
-- growth, win over the key. Led by the event or the buyer they serve
-- the same queries and never qualify for a lookup by id.
DROP INDEX seat_holds_event_active_idx;
CREATE INDEX seat_holds_event_active_idx ON seat_holds (event_id, held_until, org_id) WHERE status = 'active';
DROP INDEX seat_holds_user_active_idx;
CREATE INDEX seat_holds_user_active_idx ON seat_holds (user_id, event_id, org_id) WHERE status = 'active';
ALTER TABLE tickets DROP CONSTRAINT tickets_pkey, DROP CONSTRAINT tickets_hold_id_key,
    ADD CONSTRAINT tickets_pkey PRIMARY KEY (id, org_id),
    ADD CONSTRAINT tickets_hold_id_key UNIQUE (hold_id, org_id);
DROP INDEX tickets_one_live_per_seat;
CREATE UNIQUE INDEX tickets_one_live_per_seat ON tickets (seat_id, org_id) WHERE cancelled_at IS NULL;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey, ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id, org_id);
ALTER TABLE occupancy_snapshots DROP CONSTRAINT occupancy_snapshots_pkey,
    ADD CONSTRAINT occupancy_snapshots_pkey PRIMARY KEY (event_id, at, org_id);
ALTER TABLE hold_customers DROP CONSTRAINT hold_customers_pkey, ADD CONSTRAINT hold_customers_pkey PRIMARY KEY (hold_id, org_id);
ALTER TABLE house_allocation_seats DROP CONSTRAINT house_allocation_seats_pkey,
    ADD CONSTRAINT house_allocation_seats_pkey PRIMARY KEY (allocation_id, seat_id, org_id);
-- The name stays: store.CreateHouseSeats recognizes its violation by it.
DROP INDEX house_allocation_seats_live;
CREATE UNIQUE INDEX house_allocation_seats_live ON house_allocation_seats (seat_id, org_id) WHERE live;
ALTER TABLE waitlist_work DROP CONSTRAINT waitlist_work_pkey, ADD CONSTRAINT waitlist_work_pkey PRIMARY KEY (id, org_id);
-- A delivery's public id is looked up with its organization (Redeliver).
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, DROP CONSTRAINT webhook_deliveries_public_id_key,
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id, org_id),
    ADD CONSTRAINT webhook_deliveries_org_id_public_id_key UNIQUE (public_id, org_id);

-- An attempt lives with its delivery: it gets the delivery's org_id.
ALTER TABLE webhook_attempts ADD COLUMN org_id uuid;
UPDATE webhook_attempts a SET org_id = d.org_id FROM webhook_deliveries d WHERE d.id = a.delivery_id;
ALTER TABLE webhook_attempts ALTER COLUMN org_id SET NOT NULL,
    DROP CONSTRAINT webhook_attempts_pkey, ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id, org_id);
-- Also what the cascade from a pruned delivery finds its attempts by.
DROP INDEX webhook_attempts_delivery_idx;
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id, org_id);

-- The foreign keys again, on the new keys.
ALTER TABLE events ADD CONSTRAINT events_org_id_chart_version_id_fkey
    FOREIGN KEY (org_id, chart_version_id) REFERENCES chart_versions (org_id, id);
ALTER TABLE sections ADD CONSTRAINT sections_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE seats ADD CONSTRAINT seats_org_id_event_id_category_fkey
    FOREIGN KEY (org_id, event_id, category) REFERENCES event_categories (org_id, event_id, key);
ALTER TABLE seat_holds ADD CONSTRAINT seat_holds_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE bookings
    ADD CONSTRAINT bookings_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT bookings_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE tickets
    ADD CONSTRAINT tickets_org_id_hold_id_fkey FOREIGN KEY (org_id, hold_id) REFERENCES seat_holds (org_id, id),
    ADD CONSTRAINT tickets_org_id_booking_id_fkey FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id);
ALTER TABLE occupancy_snapshots ADD CONSTRAINT occupancy_snapshots_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE buyer_holds
    ADD CONSTRAINT buyer_holds_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT buyer_holds_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE chart_versions ADD CONSTRAINT chart_versions_org_id_chart_id_fkey
    FOREIGN KEY (org_id, chart_id) REFERENCES charts (org_id, id);
ALTER TABLE hold_customers ADD CONSTRAINT hold_customers_org_id_hold_id_fkey
    FOREIGN KEY (org_id, hold_id) REFERENCES seat_holds (org_id, id);
ALTER TABLE house_allocations
    ADD CONSTRAINT house_allocations_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT house_allocations_org_id_created_by_fkey FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id);
ALTER TABLE house_allocation_seats ADD CONSTRAINT house_allocation_seats_org_id_allocation_id_fkey
    FOREIGN KEY (org_id, allocation_id) REFERENCES house_allocations (org_id, id);
ALTER TABLE event_categories ADD CONSTRAINT event_categories_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_org_id_created_by_fkey
    FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_org_id_endpoint_id_fkey
    FOREIGN KEY (org_id, endpoint_id) REFERENCES webhook_endpoints (org_id, id);
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_org_id_delivery_id_fkey
    FOREIGN KEY (org_id, delivery_id) REFERENCES webhook_deliveries (org_id, id) ON DELETE CASCADE;
ALTER TABLE waitlist_entries
    ADD CONSTRAINT waitlist_entries_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT waitlist_entries_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE waitlist_work ADD CONSTRAINT waitlist_work_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE hold_requests
    ADD CONSTRAINT hold_requests_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT hold_requests_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);

---- create above / drop below ----

ALTER TABLE events DROP CONSTRAINT events_org_id_chart_version_id_fkey;
ALTER TABLE sections DROP CONSTRAINT sections_org_id_event_id_fkey;
ALTER TABLE seats DROP CONSTRAINT seats_org_id_event_id_category_fkey;
ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_org_id_user_id_fkey;
ALTER TABLE bookings DROP CONSTRAINT bookings_org_id_event_id_fkey, DROP CONSTRAINT bookings_org_id_user_id_fkey;
ALTER TABLE tickets DROP CONSTRAINT tickets_org_id_hold_id_fkey, DROP CONSTRAINT tickets_org_id_booking_id_fkey;
ALTER TABLE occupancy_snapshots DROP CONSTRAINT occupancy_snapshots_org_id_event_id_fkey;
ALTER TABLE buyer_holds DROP CONSTRAINT buyer_holds_org_id_event_id_fkey, DROP CONSTRAINT buyer_holds_org_id_user_id_fkey;
ALTER TABLE chart_versions DROP CONSTRAINT chart_versions_org_id_chart_id_fkey;
ALTER TABLE hold_customers DROP CONSTRAINT hold_customers_org_id_hold_id_fkey;
ALTER TABLE house_allocations DROP CONSTRAINT house_allocations_org_id_event_id_fkey,
    DROP CONSTRAINT house_allocations_org_id_created_by_fkey;
ALTER TABLE house_allocation_seats DROP CONSTRAINT house_allocation_seats_org_id_allocation_id_fkey;
ALTER TABLE event_categories DROP CONSTRAINT event_categories_org_id_event_id_fkey;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_org_id_created_by_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_org_id_endpoint_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_org_id_delivery_id_fkey;
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_org_id_event_id_fkey,
    DROP CONSTRAINT waitlist_entries_org_id_user_id_fkey;
ALTER TABLE waitlist_work DROP CONSTRAINT waitlist_work_org_id_event_id_fkey;
ALTER TABLE hold_requests DROP CONSTRAINT hold_requests_org_id_event_id_fkey,
    DROP CONSTRAINT hold_requests_org_id_user_id_fkey;

DROP INDEX webhook_attempts_delivery_idx;
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, DROP COLUMN org_id, ADD PRIMARY KEY (id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, DROP CONSTRAINT webhook_deliveries_org_id_public_id_key,
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id), ADD CONSTRAINT webhook_deliveries_public_id_key UNIQUE (public_id);
ALTER TABLE waitlist_work DROP CONSTRAINT waitlist_work_pkey, ADD CONSTRAINT waitlist_work_pkey PRIMARY KEY (id);
DROP INDEX house_allocation_seats_live;
CREATE UNIQUE INDEX house_allocation_seats_live ON house_allocation_seats (seat_id) WHERE live;
ALTER TABLE house_allocation_seats DROP CONSTRAINT house_allocation_seats_pkey,
    ADD CONSTRAINT house_allocation_seats_pkey PRIMARY KEY (allocation_id, seat_id);
ALTER TABLE hold_customers DROP CONSTRAINT hold_customers_pkey, ADD CONSTRAINT hold_customers_pkey PRIMARY KEY (hold_id);
ALTER TABLE occupancy_snapshots DROP CONSTRAINT occupancy_snapshots_pkey,
    ADD CONSTRAINT occupancy_snapshots_pkey PRIMARY KEY (event_id, at);
ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey, ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);
DROP INDEX tickets_one_live_per_seat;
CREATE UNIQUE INDEX tickets_one_live_per_seat ON tickets (seat_id) WHERE cancelled_at IS NULL;
ALTER TABLE tickets DROP CONSTRAINT tickets_pkey, DROP CONSTRAINT tickets_hold_id_key,
    ADD CONSTRAINT tickets_pkey PRIMARY KEY (id), ADD CONSTRAINT tickets_hold_id_key UNIQUE (hold_id);
DROP INDEX seat_holds_user_active_idx;
CREATE INDEX seat_holds_user_active_idx ON seat_holds (org_id, user_id, event_id) WHERE status = 'active';
DROP INDEX seat_holds_event_active_idx;
CREATE INDEX seat_holds_event_active_idx ON seat_holds (org_id, event_id, held_until) WHERE status = 'active';
DROP INDEX seat_holds_one_active;
CREATE UNIQUE INDEX seat_holds_one_active ON seat_holds (seat_id) WHERE status = 'active';
ALTER TABLE seat_holds DROP CONSTRAINT seat_holds_pkey, ADD CONSTRAINT seat_holds_pkey PRIMARY KEY (id);
ALTER TABLE seats DROP CONSTRAINT seats_pkey, DROP CONSTRAINT seats_org_id_event_id_idx_key,
    DROP CONSTRAINT seats_org_id_event_id_section_id_row_label_number_key,
    ADD CONSTRAINT seats_pkey PRIMARY KEY (id),
    ADD CONSTRAINT seats_event_id_idx_key UNIQUE (event_id, idx),
    ADD CONSTRAINT seats_event_id_section_id_row_label_number_key UNIQUE (event_id, section_id, row_label, number);
ALTER TABLE sections DROP CONSTRAINT sections_pkey, DROP CONSTRAINT sections_org_id_event_id_label_key,
    ADD CONSTRAINT sections_pkey PRIMARY KEY (id), ADD CONSTRAINT sections_event_id_label_key UNIQUE (event_id, label);
ALTER TABLE event_categories DROP CONSTRAINT event_categories_pkey,
    ADD CONSTRAINT event_categories_pkey PRIMARY KEY (event_id, key),
    ADD CONSTRAINT event_categories_org_id_event_id_key_key UNIQUE (org_id, event_id, key);
ALTER TABLE waitlist_entries DROP CONSTRAINT waitlist_entries_pkey,
    ADD CONSTRAINT waitlist_entries_pkey PRIMARY KEY (id), ADD CONSTRAINT waitlist_entries_org_id_id_key UNIQUE (org_id, id),
    ADD CONSTRAINT waitlist_entries_seq_key UNIQUE (seq);
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey,
    ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id), ADD CONSTRAINT webhook_endpoints_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE api_keys DROP CONSTRAINT api_keys_pkey,
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id), ADD CONSTRAINT api_keys_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE house_allocations DROP CONSTRAINT house_allocations_pkey,
    ADD CONSTRAINT house_allocations_pkey PRIMARY KEY (id), ADD CONSTRAINT house_allocations_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE chart_versions DROP CONSTRAINT chart_versions_pkey,
    ADD CONSTRAINT chart_versions_pkey PRIMARY KEY (id), ADD CONSTRAINT chart_versions_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE charts DROP CONSTRAINT charts_pkey,
    ADD CONSTRAINT charts_pkey PRIMARY KEY (id), ADD CONSTRAINT charts_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE bookings DROP CONSTRAINT bookings_pkey,
    ADD CONSTRAINT bookings_pkey PRIMARY KEY (id), ADD CONSTRAINT bookings_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE events DROP CONSTRAINT events_pkey,
    ADD CONSTRAINT events_pkey PRIMARY KEY (id), ADD CONSTRAINT events_org_id_id_key UNIQUE (org_id, id);
ALTER TABLE users DROP CONSTRAINT users_pkey,
    ADD CONSTRAINT users_pkey PRIMARY KEY (id), ADD CONSTRAINT users_org_id_id_key UNIQUE (org_id, id);

ALTER TABLE events ADD CONSTRAINT events_org_id_chart_version_id_fkey
    FOREIGN KEY (org_id, chart_version_id) REFERENCES chart_versions (org_id, id);
ALTER TABLE sections ADD CONSTRAINT sections_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE seats ADD CONSTRAINT seats_org_id_event_id_category_fkey
    FOREIGN KEY (org_id, event_id, category) REFERENCES event_categories (org_id, event_id, key);
ALTER TABLE seat_holds ADD CONSTRAINT seat_holds_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE bookings
    ADD CONSTRAINT bookings_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT bookings_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE tickets
    ADD CONSTRAINT tickets_hold_id_fkey FOREIGN KEY (hold_id) REFERENCES seat_holds (id),
    ADD CONSTRAINT tickets_org_id_booking_id_fkey FOREIGN KEY (org_id, booking_id) REFERENCES bookings (org_id, id);
ALTER TABLE occupancy_snapshots ADD CONSTRAINT occupancy_snapshots_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE buyer_holds
    ADD CONSTRAINT buyer_holds_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT buyer_holds_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE chart_versions ADD CONSTRAINT chart_versions_org_id_chart_id_fkey
    FOREIGN KEY (org_id, chart_id) REFERENCES charts (org_id, id);
ALTER TABLE hold_customers ADD CONSTRAINT hold_customers_hold_id_fkey FOREIGN KEY (hold_id) REFERENCES seat_holds (id);
ALTER TABLE house_allocations
    ADD CONSTRAINT house_allocations_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT house_allocations_org_id_created_by_fkey FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id);
ALTER TABLE house_allocation_seats ADD CONSTRAINT house_allocation_seats_org_id_allocation_id_fkey
    FOREIGN KEY (org_id, allocation_id) REFERENCES house_allocations (org_id, id);
ALTER TABLE event_categories ADD CONSTRAINT event_categories_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_org_id_created_by_fkey
    FOREIGN KEY (org_id, created_by) REFERENCES users (org_id, id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_org_id_endpoint_id_fkey
    FOREIGN KEY (org_id, endpoint_id) REFERENCES webhook_endpoints (org_id, id);
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_delivery_id_fkey
    FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id) ON DELETE CASCADE;
ALTER TABLE waitlist_entries
    ADD CONSTRAINT waitlist_entries_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT waitlist_entries_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);
ALTER TABLE waitlist_work ADD CONSTRAINT waitlist_work_org_id_event_id_fkey
    FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id);
ALTER TABLE hold_requests
    ADD CONSTRAINT hold_requests_org_id_event_id_fkey FOREIGN KEY (org_id, event_id) REFERENCES events (org_id, id),
    ADD CONSTRAINT hold_requests_org_id_user_id_fkey FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id);

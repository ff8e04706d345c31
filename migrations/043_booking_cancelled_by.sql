-- Who last cancelled tickets of a booking (the acting user: the buyer
-- themselves, or staff), so the buyer's page says who did it. NULL for
-- bookings never cancelled, and for cancellations made before this column.
ALTER TABLE bookings ADD COLUMN cancelled_by uuid;

---- create above / drop below ----

ALTER TABLE bookings DROP COLUMN cancelled_by;

"""One definition of written, duplicated and lost (streamlab.delivery.counting), used by module 7's crash counts and
module 9's failover demo alike, and the exercise scaffolds' `...` detection (streamlab.course.scaffold)."""
from streamlab.course import scaffold
from streamlab.course.exercises import m07, m09
from streamlab.delivery import count_delivery, failover, faults


def test_the_rule_counts_only_what_is_owed():
    assert count_delivery([1, 2, 2, 3, 3, 3, 9], [1, 2, 3, 4]) == {"written": 3, "duplicated": 3, "lost": 1}
    # copies of an id that is not owed (a send the producer was told had failed) count in none of the three
    assert count_delivery([0, 1, 1, 4, 4, 5], {0, 1, 2, 3}) == {"written": 2, "duplicated": 1, "lost": 2}
    assert count_delivery([], range(3)) == {"written": 0, "duplicated": 0, "lost": 3}


def test_module_7_and_module_9_count_with_the_same_rule():
    delivered, acked = [0, 1, 1, 4, 4, 5], {0, 1, 2, 3}
    counted = count_delivery(delivered, acked)
    assert faults.tally(delivered, acked) == counted
    assert failover.count(acked, delivered) == {"once": counted["written"], "duplicates": counted["duplicated"],
                                                "lost": counted["lost"]}


def test_a_skeleton_with_dots_left_is_not_filled_in():
    def skeleton(delivered, sent):
        arrived = ...
        return {"written": arrived}

    def sql_skeleton(conn, rows, batch_id):
        conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?) ...", rows)

    def written(delivered, sent):
        """Counted."""
        return count_delivery(delivered, sent)

    assert not scaffold.filled(skeleton) and not scaffold.filled(sql_skeleton)
    assert not scaffold.filled(None) and not scaffold.filled("CREATE TABLE t (a, ...)")
    assert scaffold.filled(written) and scaffold.filled("CREATE TABLE t (a PRIMARY KEY)", written)
    assert "fill in the ... of ex3_ddl, ex3_save" in scaffold.waiting("ex3_ddl", "ex3_save")


def test_the_visible_checks_fail_an_untouched_skeleton_and_pass_the_rule(capsys):
    def skeleton(acked, delivered):
        owed = ...
        return owed

    m09.ex3_copies(skeleton)
    m09.ex3_copies(lambda acked, delivered: count_delivery(delivered, acked))
    m07.ex2_count_delivery(skeleton)
    m07.ex2_count_delivery(count_delivery)
    marks = [line[:1] for line in capsys.readouterr().out.splitlines() if line[:1] in "✓✗"]
    assert marks == ["✗", "✓", "✗", "✓"], marks

;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lispcore.lisp - a Lisp program whose time goes to SBCL's own functions, for
;;; Debian's sbcl (tests/integration/test_sbcl4.py):
;;;   sbcl --script lispcore.lisp [SECONDS]   or   sbcl --load lispcore.lisp
;;; DRIVE runs, in turn, SORT-WORK (SORT of a vector), HASH-WORK (GETHASH in
;;; an EQUAL table: SB-IMPL::GETHASH/EQUAL) and FORMAT-WORK (FORMAT with a
;;; control string known only at run time: SB-FORMAT's interpreter), each
;;; through RUN-FOR for 20, 10 and 10 ms of the process's CPU time (its calls
;;; take well under 0.1 ms, so the shares are 1/2, 1/4 and 1/4 whatever the
;;; machine's load), each round's three scaled by one random factor of 0.5 to
;;; 1.5: rounds of a fixed length would alias with a sampling period near
;;; 10 ms (99 Hz), giving one of them more samples than its share. None of
;;; them ends in a tail call: each stays on the stack under its callee. It stops after SECONDS of CPU time (default 3), then exits.

(defpackage :lispcore (:use :cl))
(in-package :lispcore)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

(defvar *vec* (let ((v (make-array 200)))
                (dotimes (i 200 v) (setf (aref v i) (random 1000000)))))
(defvar *keys* (let ((v (make-array 1000)))
                 (dotimes (i 1000 v) (setf (aref v i) (format nil "key-~d" i)))))
(defvar *table* (let ((h (make-hash-table :test 'equal)))
                  (dotimes (i 1000 h) (setf (gethash (aref *keys* i) h) i))))
(defvar *control* (copy-seq "~a ~d ~,2f"))

(defun sort-work ()
  (length (sort (copy-seq *vec*) #'<)))

(defun hash-work ()
  (let ((s 0))
    (dotimes (i 1000 s)
      (incf s (gethash (aref *keys* i) *table* 0)))))

(defun format-work ()
  (let ((s 0))
    (dotimes (i 20 s)
      (incf s (length (format nil *control* "x" i 1.5))))))

(defun run-for (fn usec)
  (let ((until (+ (get-internal-run-time)
                  (floor (* usec internal-time-units-per-second) 1000000))))
    (loop while (< (get-internal-run-time) until) do (funcall fn))))

(defun drive (seconds)
  (let ((until (+ (get-internal-run-time) (* seconds internal-time-units-per-second))))
    (loop while (< (get-internal-run-time) until)
          do (let ((usec (floor (* 10000 (+ 0.5 (random 1.0))))))
               (run-for #'sort-work (* 2 usec))
               (run-for #'hash-work usec)
               (run-for #'format-work usec)))))

(drive (let ((a (car (last sb-ext:*posix-argv*))))
         (or (parse-integer a :junk-allowed t) 3)))
(sb-ext:exit)

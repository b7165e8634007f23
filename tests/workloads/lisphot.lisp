;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lisphot.lisp - a Lisp program with two hot functions under a driver, for
;;; Debian's sbcl (tests/integration/test_sbcl.py): `sbcl --script lisphot.lisp SECONDS`.
;;; ALPHA-WORK runs twice as long per round as BETA-WORK (the same loop, twice
;;; the iterations); GAMMA-WORK a little, in SBCL's assembly routines. Prints "ready" once running, then spins until SECONDS have passed.

(defpackage :lisphot (:use :cl))
(in-package :lisphot)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

;;; The two hot functions: the same loop, in fixnum arithmetic (no calls).
(defun alpha-work (n)
  (declare (type (unsigned-byte 30) n))
  (let ((acc 0))
    (declare (type (unsigned-byte 24) acc))
    (dotimes (i (* 2 n) acc)
      (setf acc (logand (+ (* acc 31) i) #xffffff)))))

(defun beta-work (n)
  (declare (type (unsigned-byte 30) n))
  (let ((acc 0))
    (declare (type (unsigned-byte 24) acc))
    (dotimes (i n acc)
      (setf acc (logand (+ (* acc 31) i) #xffffff)))))

;;; A little untyped arithmetic: SBCL's assembly routines (GENERIC-+, GENERIC-<).
(defun gamma-work (n)
  (let ((acc 0))
    (dotimes (i n acc)
      (setf acc (+ acc i)))))

(defun drive (seconds)
  (let ((until (+ (get-internal-real-time)
                  (* seconds internal-time-units-per-second)))
        (sink 0))
    (loop while (< (get-internal-real-time) until)
          do (setf sink (logxor sink (alpha-work 400000) (beta-work 400000)
                                (logand (gamma-work 20000) 1))))
    sink))

(format t "ready~%")
(finish-output)
(drive (parse-integer (or (second sb-ext:*posix-argv*) "10")))
